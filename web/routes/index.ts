/** Every route of the web app, one definition each (web/routes/define.ts), area by area. */
import { ADMIN_ROUTES } from './admin.js';
import { CHAT_ROUTES } from './chat.js';
import { DATA_ACCESS_ROUTES } from './data-access.js';
import type { RouteDef } from './define.js';
import { IDENTITY_ROUTES } from './identity.js';
import { PLATFORM_ROUTES } from './platform.js';

export type { RouteDef, Who } from './define.js';

export const ROUTES: readonly RouteDef[] = [
  ...PLATFORM_ROUTES,
  ...IDENTITY_ROUTES,
  ...DATA_ACCESS_ROUTES,
  ...CHAT_ROUTES,
  ...ADMIN_ROUTES,
];
