import { EventEmitter } from 'node:events';
import { nowIso, type Db } from '../../core/index.js';

/** Payload of the social-account added / updated signals (fired after an SSO login). */
export interface SocialAccountEvent {
  userId: number;
  connectionId: number;
  provider: string;
  /** The provider's `sub` claim. */
  sub: string;
  email: string;
}

export const SOCIAL_ACCOUNT_ADDED = 'social_account_added';
export const SOCIAL_ACCOUNT_UPDATED = 'social_account_updated';

/**
 * In-process signals of the login flow. `added` fires the first time a (connection, sub)
 * logs in, `updated` on later logins. Listeners run synchronously, so the ExternalIdentity
 * exists before the browser is redirected to callback_url.
 */
export class IdentitySignals extends EventEmitter<{
  [SOCIAL_ACCOUNT_ADDED]: [SocialAccountEvent];
  [SOCIAL_ACCOUNT_UPDATED]: [SocialAccountEvent];
}> {}

/** Upsert the ExternalIdentity for the user and the provider's connection (docs/rules.md#login-flow, step 6). */
export function upsertExternalIdentity(db: Db, e: SocialAccountEvent): void {
  const now = nowIso();
  db.prepare(
    `INSERT INTO external_identities (user_id, connection_id, sub, email, last_login_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (connection_id, sub) DO UPDATE SET
       user_id = excluded.user_id, email = excluded.email, last_login_at = excluded.last_login_at, updated_at = excluded.last_login_at`,
  ).run(e.userId, e.connectionId, e.sub, e.email, now);
}

/** Signals with the ExternalIdentity handler attached to both events. */
export function createIdentitySignals(db: Db): IdentitySignals {
  const s = new IdentitySignals();
  const handler = (e: SocialAccountEvent) => upsertExternalIdentity(db, e);
  s.on(SOCIAL_ACCOUNT_ADDED, handler);
  s.on(SOCIAL_ACCOUNT_UPDATED, handler);
  return s;
}
