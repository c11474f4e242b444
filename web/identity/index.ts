import { Router } from 'express';
import { atRestEncryptor, type Encryptor } from '../../core/index.js';
import type { WebContext } from '../context.js';
import { identityAdminRoutes } from './admin-routes.js';
import { createIdentitySignals, type IdentitySignals } from '../../domain/identity/index.js';
import { ssoRoutes } from './sso-routes.js';

export * from '../../domain/identity/index.js';
export { SSO_REDIRECT_PATH, callbackPath, checkCallbackUrl } from './sso-routes.js';

/** The at-rest encryptor for IdP secrets (same key as every other encrypted column). */
export function identityEncryptor(config: WebContext['config']): Encryptor {
  return atRestEncryptor(config);
}

/**
 * The identity area: SSO routes (mounted at the root: they live partly outside /api) and the
 * /api/identity admin API. `signals` is exposed so other areas can listen to login signals.
 */
export function identityRouters(ctx: WebContext): { sso: Router; api: Router; signals: IdentitySignals } {
  const enc = ctx.encryptor;
  const signals = createIdentitySignals();
  return { sso: ssoRoutes(ctx, enc, signals), api: identityAdminRoutes(ctx, enc), signals };
}
