import { logAction, type ActionEvent } from './action-log.js';
import { inTransaction, nowIso } from './db/index.js';
import type { Row, Sql } from './db/index.js';
import type { AccountTokens, ConnectedAccount, Encryptor } from '../core/index.js';
import type { AccountView } from '../core/api-types-account.js';

/** The status view of a connected account: never token material. */
export function accountView(a: ConnectedAccount | undefined): AccountView {
  if (!a) return { connected: false };
  return {
    connected: true,
    provider: a.provider,
    email: a.email,
    scopes: a.scopes,
    connected_at: a.connectedAt,
    access_expires_at: a.accessExpiresAt ? new Date(a.accessExpiresAt).toISOString() : null,
    offline: a.hasRefreshToken,
  };
}

/**
 * connected_accounts, with tokens encrypted at rest (AAD binds each box to its user and kind);
 * the database (either engine) only ever holds the sealed boxes.
 */
export class AccountStore {
  readonly #db: Sql;
  readonly #enc: Encryptor;
  /** The account address last read or written per user, for synchronous readers (emailSeen). */
  readonly #emails = new Map<number, string | null>();

  constructor(db: Sql, enc: Encryptor) {
    this.#db = db;
    this.#enc = enc;
  }

  async get(userId: number): Promise<ConnectedAccount | undefined> {
    const r = await this.#row(userId);
    if (!r) return undefined;
    return {
      userId: r.user_id,
      provider: r.provider,
      email: r.email,
      scopes: r.scopes.split(' ').filter(Boolean),
      connectedAt: r.connected_at,
      accessExpiresAt: r.access_token_enc ? nullableNumber(r.access_expires_at) : null,
      hasRefreshToken: !!r.refresh_token_enc,
    };
  }

  async tokens(userId: number): Promise<AccountTokens | undefined> {
    const r = await this.#row(userId);
    if (!r) return undefined;
    return {
      accessToken: r.access_token_enc ? this.#enc.decrypt(r.access_token_enc, `account:${userId}:access`) : undefined,
      accessExpiresAt: nullableNumber(r.access_expires_at) ?? undefined,
      refreshToken: r.refresh_token_enc
        ? this.#enc.decrypt(r.refresh_token_enc, `account:${userId}:refresh`)
        : undefined,
    };
  }

  /**
   * The account's address as this store last read or wrote it (undefined: not seen or not
   * connected). The session overlay asks for it right after the token service read the user's
   * tokens, which reads the same row.
   */
  emailSeen(userId: number): string | null | undefined {
    return this.#emails.get(userId);
  }

  /**
   * Create or replace the user's connected account (a refresh token already stored is kept when
   * none comes); `entry`, when given, goes to the action log in the same transaction.
   */
  async connect(
    userId: number,
    a: { email?: string | null; scopes: string[]; accessToken: string; expiresAt: number; refreshToken?: string },
    entry?: ActionEvent,
  ): Promise<void> {
    const now = nowIso();
    await inTransaction(this.#db, async (trx) => {
      await this.#upsert(trx, userId, a, now);
      if (entry) await logAction(trx, entry);
    });
    this.#emails.set(userId, a.email ?? null);
  }

  async #upsert(
    db: Sql,
    userId: number,
    a: { email?: string | null; scopes: string[]; accessToken: string; expiresAt: number; refreshToken?: string },
    now: string,
  ): Promise<void> {
    await db
      .insertInto('connected_accounts')
      .values({
        user_id: userId,
        email: a.email ?? null,
        scopes: a.scopes.join(' '),
        refresh_token_enc: a.refreshToken ? this.#enc.encrypt(a.refreshToken, `account:${userId}:refresh`) : null,
        access_token_enc: this.#enc.encrypt(a.accessToken, `account:${userId}:access`),
        access_expires_at: a.expiresAt,
        connected_at: now,
        updated_at: now,
      })
      .onConflict((oc) =>
        oc.column('user_id').doUpdateSet((eb) => ({
          email: eb.ref('excluded.email'),
          scopes: eb.ref('excluded.scopes'),
          refresh_token_enc: eb.fn.coalesce('excluded.refresh_token_enc', 'connected_accounts.refresh_token_enc'),
          access_token_enc: eb.ref('excluded.access_token_enc'),
          access_expires_at: eb.ref('excluded.access_expires_at'),
          connected_at: eb.ref('excluded.connected_at'),
          updated_at: eb.ref('excluded.updated_at'),
        })),
      )
      .execute();
  }

  /** Cache a refreshed access token (and a rotated refresh token, when the provider sent one). */
  async saveAccess(userId: number, accessToken: string, expiresAt: number, refreshToken?: string): Promise<void> {
    await this.#db
      .updateTable('connected_accounts')
      .set({
        access_token_enc: this.#enc.encrypt(accessToken, `account:${userId}:access`),
        access_expires_at: expiresAt,
        updated_at: nowIso(),
        ...(refreshToken ? { refresh_token_enc: this.#enc.encrypt(refreshToken, `account:${userId}:refresh`) } : {}),
      })
      .where('user_id', '=', userId)
      .execute();
  }

  /**
   * Delete the user's connected account; `entry`, when given, goes to the action log in the
   * same transaction if there was one. Returns whether there was.
   */
  async disconnect(userId: number, entry?: ActionEvent): Promise<boolean> {
    const had = await inTransaction(this.#db, async (trx) => {
      const r = await trx.deleteFrom('connected_accounts').where('user_id', '=', userId).executeTakeFirst();
      const deleted = Number(r.numDeletedRows) > 0;
      if (deleted && entry) await logAction(trx, entry);
      return deleted;
    });
    this.#emails.delete(userId);
    return had;
  }

  async #row(userId: number): Promise<Row<'connected_accounts'> | undefined> {
    const r = await this.#db
      .selectFrom('connected_accounts')
      .selectAll()
      .where('user_id', '=', userId)
      .executeTakeFirst();
    if (r) this.#emails.set(userId, r.email);
    else this.#emails.delete(userId);
    return r;
  }
}

/** BIGINT columns come back as numbers (domain/db/database.ts); this also accepts numeric text. */
function nullableNumber(v: number | string | null): number | null {
  return v === null ? null : Number(v);
}
