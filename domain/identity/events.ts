import { EventEmitter } from 'node:events';
import { logAction } from '../action-log.js';
import { inTransaction, nowIso, type Sql } from '../db/index.js';
import { recordLogin } from '../users.js';

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
 * logs in, `updated` on later logins. The login flow writes the ExternalIdentity itself
 * (recordSsoLogin, awaited before the browser is redirected to callback_url) and then
 * fires the signal for other listeners.
 */
export class IdentitySignals extends EventEmitter<{
  [SOCIAL_ACCOUNT_ADDED]: [SocialAccountEvent];
  [SOCIAL_ACCOUNT_UPDATED]: [SocialAccountEvent];
}> {}

/** Upsert the ExternalIdentity for the user and the provider's connection (docs/rules.md#login-flow, step 6). */
export async function upsertExternalIdentity(db: Sql, e: SocialAccountEvent): Promise<void> {
  const now = nowIso();
  await db
    .insertInto('external_identities')
    .values({ user_id: e.userId, connection_id: e.connectionId, sub: e.sub, email: e.email, last_login_at: now })
    .onConflict((oc) =>
      oc
        .columns(['connection_id', 'sub'])
        .doUpdateSet({ user_id: e.userId, email: e.email, last_login_at: now, updated_at: now }),
    )
    .execute();
}

/**
 * The writes of a successful SSO login, in one transaction: the user's last_login_at, the
 * `auth.login` entry of the action log and the ExternalIdentity. Returns whether the provider's
 * `sub` had logged in through this connection before (which signal to fire).
 */
export async function recordSsoLogin(db: Sql, e: SocialAccountEvent): Promise<{ known: boolean }> {
  return inTransaction(db, async (trx) => {
    await recordLogin(trx, e.userId);
    await logAction(trx, {
      event: 'auth.login',
      actorId: e.userId,
      subjectId: e.userId,
      data: { method: 'sso', provider: e.provider },
    });
    const known = await trx
      .selectFrom('external_identities')
      .select('id')
      .where('connection_id', '=', e.connectionId)
      .where('sub', '=', e.sub)
      .executeTakeFirst();
    await upsertExternalIdentity(trx, e);
    return { known: !!known };
  });
}

/** The login signals (the ExternalIdentity is written by the login flow before they fire). */
export function createIdentitySignals(): IdentitySignals {
  return new IdentitySignals();
}
