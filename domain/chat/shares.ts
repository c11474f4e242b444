import { createHash, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { StoredTurn } from '../../core/chat-history.js';
import { inTransaction, nowIso, type Row, type Sql } from '../db/index.js';
import { pathTo, turnNodes } from './branches.js';
import { messagesOf, type ChatSessionRow } from './store.js';

/**
 * Read-only links to a chat (migration 018, docs/chat.md "Sharing a chat"). The owner makes a
 * link; its token (256 random bits) is shown once and stored only as its SHA-256. A chat has at
 * most one live link: making a new one revokes the old. The link shows the finished turns of the
 * branch shown when it was made. Who may open it is decided here (mayOpen); web/share-routes.ts
 * answers 404 for everything else.
 */

export type ChatShareRow = Row<'chat_shares'>;

/** What a token looks like: 43 base64url characters (32 bytes). Anything else is no token. */
export const SHARE_TOKEN_RE = /^[A-Za-z0-9_-]{43}$/;

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** A new link for the chat (its current head), revoking any live one; the token is returned once. */
export async function createShare(
  db: Sql,
  s: ChatSessionRow,
): Promise<{ token: string; share: ChatShareRow; revoked: number }> {
  const token = randomBytes(32).toString('base64url');
  return inTransaction(db, async (trx) => {
    const revoked = await revokeShares(trx, s.id);
    const share = await trx
      .insertInto('chat_shares')
      .values({ session_id: s.id, user_id: s.user_id, token_hash: hashToken(token), head_turn_id: s.head_turn_id })
      .returningAll()
      .executeTakeFirstOrThrow();
    return { token, share, revoked };
  });
}

/** The chat's live link (undefined: not shared). */
export async function liveShare(db: Sql, sessionId: string): Promise<ChatShareRow | undefined> {
  return db
    .selectFrom('chat_shares')
    .selectAll()
    .where('session_id', '=', sessionId)
    .where('revoked_at', 'is', null)
    .orderBy('id', 'desc')
    .executeTakeFirst();
}

/** Revoke the chat's live links; returns how many there were. */
export async function revokeShares(db: Sql, sessionId: string): Promise<number> {
  const r = await db
    .updateTable('chat_shares')
    .set({ revoked_at: nowIso() })
    .where('session_id', '=', sessionId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}

/**
 * The organisations a user belongs to: as a member, or through a team of the organisation
 * (the same reach as the organisation's policies, domain/identity/orgs.ts orgMemberIds).
 */
export async function organisationsOf(db: Sql, userId: number): Promise<Set<number>> {
  const { rows } = await sql<{ id: number }>`
    SELECT organisation_id AS id FROM organisation_members WHERE user_id = ${userId}
    UNION SELECT t.organisation_id AS id FROM team_members tm JOIN teams t ON t.id = tm.team_id WHERE tm.user_id = ${userId}`.execute(
    db,
  );
  return new Set(rows.map((r) => Number(r.id)));
}

/**
 * Same organisation: the two users share at least one organisation; two users who belong to none
 * count as one organisation (a server without organisations is one), never one with and one
 * without. The owner always may.
 */
export async function sameOrganisation(db: Sql, owner: number, viewer: number): Promise<boolean> {
  if (owner === viewer) return true;
  const [a, b] = await Promise.all([organisationsOf(db, owner), organisationsOf(db, viewer)]);
  if (a.size === 0 && b.size === 0) return true;
  for (const id of a) if (b.has(id)) return true;
  return false;
}

/** An opened link: the share, its chat and its owner's name. */
export interface OpenShare {
  share: ChatShareRow;
  session: ChatSessionRow;
  owner: { id: number; name: string };
}

/**
 * The link `token` as `viewerId` may open it: live, its chat still there, its owner active and
 * in an organisation with the viewer (checked now, not when it was made). Undefined otherwise;
 * the caller answers every undefined alike (404).
 */
export async function mayOpen(db: Sql, token: string, viewerId: number): Promise<OpenShare | undefined> {
  if (!SHARE_TOKEN_RE.test(token)) return undefined;
  const share = await db
    .selectFrom('chat_shares')
    .selectAll()
    .where('token_hash', '=', hashToken(token))
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  if (!share) return undefined;
  const session = await db
    .selectFrom('chat_sessions')
    .selectAll()
    .where('id', '=', share.session_id)
    .where('user_id', '=', share.user_id)
    .executeTakeFirst();
  const owner = await db
    .selectFrom('users')
    .select(['id', 'username', 'display_name', 'is_active'])
    .where('id', '=', share.user_id)
    .executeTakeFirst();
  if (!session || !owner || !owner.is_active) return undefined;
  if (!(await sameOrganisation(db, owner.id, viewerId))) return undefined;
  return { share, session, owner: { id: owner.id, name: owner.display_name || owner.username } };
}

/**
 * The turns a link shows: the branch ending at the head it was made with, finished turns only,
 * each as the only version of itself (other branches' ids are not shown).
 */
export async function sharedTurns(db: Sql, share: ChatShareRow): Promise<StoredTurn[]> {
  const nodes = await turnNodes(db, share.session_id);
  const ids = pathTo(nodes, share.head_turn_id);
  const turns = await messagesOf(db, share.session_id, ids);
  return turns.filter((t) => t.status === 'done').map(({ items: _items, ...t }) => ({ ...t, siblings: [t.turn_id] }));
}
