/**
 * Changes to accounts made by the user themself (password, default model) or by a superuser
 * (deactivate, reactivate, promote, demote, reset a password): docs/ui-admin.md "Users",
 * docs/chat.md "Settings". Each change and its action-log entry are one transaction; ending the
 * user's live sandboxes is the caller's (it is the daemon's, after the commit).
 */
import { randomBytes } from 'node:crypto';
import { AppError, hashPassword } from '../core/index.js';
import { logAction } from './action-log.js';
import { nowIso, type Sql } from './db/index.js';
import { getUserById, type User } from './users.js';
import { deleteOtherWebSessions, deleteUserWebSessions } from './web-sessions.js';

/** The password rules of every password set here (the same as `airlock create-superuser`). */
export const PASSWORD_MIN = 8;
export const PASSWORD_MAX = 1024;

/** The stored password hash (null: the user signs in by single sign-on only). */
export async function passwordHashOf(db: Sql, userId: number): Promise<string | null> {
  const r = await db.selectFrom('users').select('password_hash').where('id', '=', userId).executeTakeFirst();
  return r?.password_hash ?? null;
}

/**
 * The user changed their own password (the current one checked by the caller): the new hash,
 * every other web session of the user ended (the one that asked stays), an audit entry. Returns
 * how many sessions ended.
 */
export async function changeOwnPassword(db: Sql, userId: number, password: string, keepSid: string): Promise<number> {
  const hash = await hashPassword(password);
  return runSerializable(db, async (trx) => {
    await trx
      .updateTable('users')
      .set({ password_hash: hash, updated_at: nowIso() })
      .where('id', '=', userId)
      .execute();
    const ended = await deleteOtherWebSessions(trx, userId, keepSid);
    await logAction(trx, {
      event: 'auth.password_changed',
      actorId: userId,
      subjectId: userId,
      data: { sessions_ended: ended },
    });
    return ended;
  });
}

/** A one-time password an admin hands over: 20 characters of base64url (120 bits). */
export function generatedPassword(): string {
  return randomBytes(15).toString('base64url');
}

/**
 * An admin sets a user's password (their own choice, or one generated here and shown once):
 * every web session of the user ends, so whoever held the old password is out. Returns how many.
 * Not the admin's own (ERR_USER_SELF): that is Settings, with the current password.
 */
export async function resetPassword(
  db: Sql,
  actorId: number,
  userId: number,
  password: string,
  generated: boolean,
): Promise<number> {
  if (userId === actorId)
    throw new AppError('ERR_USER_SELF', 'change your own password under Settings (it needs your current one)');
  const hash = await hashPassword(password);
  return runSerializable(db, async (trx) => {
    await mustExist(trx, userId);
    await trx
      .updateTable('users')
      .set({ password_hash: hash, updated_at: nowIso() })
      .where('id', '=', userId)
      .execute();
    const ended = await deleteUserWebSessions(trx, userId);
    await logAction(trx, {
      event: 'auth.password_reset',
      severity: 'warning',
      actorId,
      subjectId: userId,
      data: { generated, sessions_ended: ended },
    });
    return ended;
  });
}

export interface UserChange {
  is_active?: boolean;
  is_superuser?: boolean;
}

/**
 * An admin changes a user's active or superuser flag. Refused: the admin's own account
 * (ERR_USER_SELF: no one locks themself out) and a change that would leave no active
 * superuser (ERR_USER_LAST_SUPERUSER), checked in a serializable transaction so two admins
 * demoting each other at once cannot both win. Deactivating ends the user's web sessions.
 */
export async function changeUser(
  db: Sql,
  actorId: number,
  userId: number,
  c: UserChange,
): Promise<{ user: User; deactivated: boolean; sessionsEnded: number }> {
  if (userId === actorId && (c.is_active === false || c.is_superuser === false)) {
    throw new AppError('ERR_USER_SELF', 'you cannot deactivate or demote your own account; ask another superuser');
  }
  return runSerializable(db, async (trx) => {
    const before = await mustExist(trx, userId);
    const active = c.is_active ?? before.is_active;
    const superuser = c.is_superuser ?? before.is_superuser;
    if (before.is_active && before.is_superuser && !(active && superuser)) {
      const others = await trx
        .selectFrom('users')
        .select('id')
        .where('is_active', '=', 1)
        .where('is_superuser', '=', 1)
        .where('id', '<>', userId)
        .execute();
      if (!others.length)
        throw new AppError('ERR_USER_LAST_SUPERUSER', 'this is the last active superuser; promote another user first');
    }
    await trx
      .updateTable('users')
      .set({ is_active: active ? 1 : 0, is_superuser: superuser ? 1 : 0, updated_at: nowIso() })
      .where('id', '=', userId)
      .execute();
    const deactivated = before.is_active && !active;
    const sessionsEnded = deactivated ? await deleteUserWebSessions(trx, userId) : 0;
    const log = (event: string, data: Record<string, unknown> = {}) =>
      logAction(trx, { event, severity: 'warning', actorId, subjectId: userId, data: { by: 'admin', ...data } });
    if (deactivated) await log('identity.user_deactivated', { sessions_ended: sessionsEnded });
    if (!before.is_active && active) await log('identity.user_reactivated');
    if (!before.is_superuser && superuser) await log('identity.user_promoted');
    if (before.is_superuser && !superuser) await log('identity.user_demoted');
    return { user: (await getUserById(trx, userId))!, deactivated, sessionsEnded };
  });
}

/** The model a new chat of the user starts with (null: the server's default). */
export async function defaultModelOf(db: Sql, userId: number): Promise<string | null> {
  const r = await db.selectFrom('users').select('default_model_id').where('id', '=', userId).executeTakeFirst();
  return r?.default_model_id ?? null;
}

/** Set it (checked by the caller: an enabled model the user may choose), with its audit entry. */
export async function setDefaultModel(db: Sql, userId: number, modelId: string | null): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx
      .updateTable('users')
      .set({ default_model_id: modelId, updated_at: nowIso() })
      .where('id', '=', userId)
      .execute();
    await logAction(trx, {
      event: 'settings.default_model_changed',
      actorId: userId,
      subjectId: userId,
      data: { model_id: modelId },
    });
  });
}

async function mustExist(db: Sql, userId: number): Promise<User> {
  const u = await getUserById(db, userId);
  if (!u) throw new AppError('ERR_USER_NOT_FOUND', 'no such user');
  return u;
}

const MAX_TRIES = 10;

/** A serializable transaction, run again on PostgreSQL's serialization failures (SQLite runs them one at a time). */
async function runSerializable<T>(db: Sql, fn: (trx: Sql) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction().setIsolationLevel('serializable').execute(fn);
    } catch (err) {
      const code = (err as { code?: unknown } | undefined)?.code;
      if ((code !== '40001' && code !== '40P01') || attempt >= MAX_TRIES) throw err;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * attempt));
    }
  }
}
