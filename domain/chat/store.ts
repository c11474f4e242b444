import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { StopReason } from '../../core/sandbox-protocol.js';
import type { ChatSessionEntry, StoredToolCall, StoredTurn } from '../../core/chat-history.js';
import type { TranscriptItem, TurnUsage } from '../../core/transcript.js';
import { inTransaction, nowIso, type Row, type Sql } from '../db/index.js';
import { AppError } from '../../core/errors.js';
import { TranscriptSchema } from '../../core/transcript.js';
import { turnApprovals } from './approvals.js';
import { headOf, newestLeaf, pathTo, setHead, siblingsAlong, turnNodes } from './branches.js';
import { fallbackTitle } from './titles.js';
import { MAX_TITLE_CHARS } from '../../core/api-requests.js';

/**
 * Chat history (migration 002-chat): sessions owned by a user, turns, tool calls. Written by
 * domain/chat/turn-service.ts as a turn streams. Every function takes the database or a transaction;
 * the ones that change several rows run in one transaction (the caller's, when given one).
 */

export type ChatSessionRow = Row<'chat_sessions'>;

/** One entry of a user's session list (the chat API adds the running turn). */
export interface ChatSessionListEntry extends ChatSessionEntry {
  /** The chat's own model (null: the default; migration 013). */
  model_id: string | null;
}

const MAX_OUTPUT_CHARS = 64 * 1024;
/** Longest title a rename may set. */
export { MAX_TITLE_CHARS };

/** Kept here for the modules that import it from this store (domain/db/transaction.ts). */
export { inTransaction };

/** A LIKE pattern matching `q` anywhere (lower-cased), with its wildcards escaped (ESCAPE '\\'). */
function likeAnywhere(q: string): string {
  return `%${q.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

function capJson(v: unknown): string | null {
  if (v === undefined) return null;
  const s = JSON.stringify(v);
  if (s.length <= MAX_OUTPUT_CHARS) return s;
  return JSON.stringify({ truncated: true, preview: s.slice(0, MAX_OUTPUT_CHARS) });
}

function parseJson(s: string | null): unknown {
  if (s === null) return undefined;
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}

/** The session if it exists and belongs to the user; undefined otherwise (both read as 404). */
export async function getOwnedSession(db: Sql, userId: number, sessionId: string): Promise<ChatSessionRow | undefined> {
  return db
    .selectFrom('chat_sessions')
    .selectAll()
    .where('id', '=', sessionId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
}

/** A session's title, whoever owns it (undefined when there is no such session). */
export async function sessionTitle(db: Sql, sessionId: string): Promise<string | undefined> {
  const r = await db.selectFrom('chat_sessions').select('title').where('id', '=', sessionId).executeTakeFirst();
  return r?.title;
}

/** A new session titled after its first message; `id` may be chosen by the caller. */
export async function createSession(
  db: Sql,
  userId: number,
  firstMessage: string,
  id: string = randomUUID(),
): Promise<ChatSessionRow> {
  const title = fallbackTitle(firstMessage);
  return db.insertInto('chat_sessions').values({ id, user_id: userId, title }).returningAll().executeTakeFirstOrThrow();
}

/**
 * The user's sessions, newest first. With `q`: only those whose title, a prompt or an answer
 * contains it (case-insensitive: both sides lower-cased).
 */
export async function listSessions(db: Sql, userId: number, q?: string): Promise<ChatSessionListEntry[]> {
  let s = db
    .selectFrom('chat_sessions as s')
    .leftJoin('chat_turns as t', 't.session_id', 's.id')
    .select([
      's.id',
      's.title',
      's.created_at',
      's.updated_at',
      's.pinned',
      's.model_id',
      's.title_source',
      (eb) => eb.fn.count<number>('t.id').as('turn_count'),
    ])
    .where('s.user_id', '=', userId);
  if (q) {
    const pattern = likeAnywhere(q);
    const like = (col: string) => sql<boolean>`lower(${sql.ref(col)}) LIKE ${pattern} ESCAPE '\\'`;
    s = s.where((eb) =>
      eb.or([
        like('s.title'),
        eb.exists(
          eb
            .selectFrom('chat_turns as m')
            .select(sql`1`.as('one'))
            .whereRef('m.session_id', '=', 's.id')
            .where((e) => e.or([like('m.prompt'), like('m.text')])),
        ),
      ]),
    );
  }
  const rows = await s
    .groupBy('s.id')
    .orderBy('s.pinned', 'desc')
    .orderBy('s.updated_at', 'desc')
    .orderBy('s.created_at', 'desc')
    .orderBy('s.id')
    .execute();
  return rows.map((r) => ({ ...r, turn_count: Number(r.turn_count), pinned: Number(r.pinned) === 1 }));
}

/** Pin a chat to the top of its user's list, or unpin it. */
export async function setPinned(db: Sql, sessionId: string, pinned: boolean): Promise<void> {
  await db
    .updateTable('chat_sessions')
    .set({ pinned: pinned ? 1 : 0 })
    .where('id', '=', sessionId)
    .execute();
}

export async function renameSession(db: Sql, sessionId: string, title: string): Promise<void> {
  await db
    .updateTable('chat_sessions')
    .set({ title: title.replace(/\s+/g, ' ').trim().slice(0, MAX_TITLE_CHARS), title_source: 'user' })
    .where('id', '=', sessionId)
    .execute();
}

/** Delete a session with its turns, tool calls and connector approvals. */
export async function deleteSession(db: Sql, sessionId: string): Promise<void> {
  await inTransaction(db, async (trx) => {
    const turns = trx.selectFrom('chat_turns').select('id').where('session_id', '=', sessionId);
    await trx.deleteFrom('chat_tool_calls').where('turn_id', 'in', turns).execute();
    await trx.deleteFrom('chat_turns').where('session_id', '=', sessionId).execute();
    await trx.deleteFrom('connector_approvals').where('session_id', '=', sessionId).execute();
    await trx.deleteFrom('chat_sessions').where('id', '=', sessionId).execute();
  });
}

/**
 * Where a new turn goes on the chat's tree: after the head (a new message), or beside
 * `replaces` (an edit or a regenerate: same parent, the old turn stays as a sibling). Returns the
 * parent, and the head to restore if the turn is refused. `replaces` must be on the branch shown:
 * ERR_CHAT_TURN_NOT_FOUND when it is no turn of this chat, ERR_CHAT_REPLACE_OFF_BRANCH when it
 * is on another branch.
 */
export async function placeTurn(
  db: Sql,
  sessionId: string,
  replaces?: string,
): Promise<{ parent: string | null; head: string | null }> {
  const head = await headOf(db, sessionId);
  if (!replaces) return { parent: head, head };
  const nodes = await turnNodes(db, sessionId);
  const node = nodes.find((n) => n.id === replaces);
  if (!node) throw new AppError('ERR_CHAT_TURN_NOT_FOUND', 'no such turn in this chat session');
  if (!pathTo(nodes, head).includes(replaces))
    throw new AppError(
      'ERR_CHAT_REPLACE_OFF_BRANCH',
      'that turn is not on the branch shown; switch to its branch first',
    );
  return { parent: node.parent_id, head };
}

/** Show the branch through `turnId` (its newest continuation); returns the new head. */
export async function switchBranch(db: Sql, sessionId: string, turnId: string): Promise<string> {
  return inTransaction(db, async (trx) => {
    const nodes = await turnNodes(trx, sessionId);
    if (!nodes.some((n) => n.id === turnId))
      throw new AppError('ERR_CHAT_TURN_NOT_FOUND', 'no such turn in this chat session');
    const head = newestLeaf(nodes, turnId);
    await setHead(trx, sessionId, head);
    return head;
  });
}

/**
 * Record a new running turn after `parent` (default: the chat's head), make it the chat's head,
 * and touch the session. A
 * session's turns are ordered by started_at, so a turn never starts at or before the one before it
 * (two in one millisecond stay in order).
 */
export async function startTurn(
  db: Sql,
  sessionId: string,
  turnId: string,
  prompt: string,
  parent?: string | null,
): Promise<void> {
  await inTransaction(db, async (trx) => {
    if (parent === undefined) parent = await headOf(trx, sessionId);
    const prev = await trx
      .selectFrom('chat_turns')
      .select((eb) => eb.fn.max('started_at').as('at'))
      .where('session_id', '=', sessionId)
      .executeTakeFirst();
    let at = nowIso();
    if (prev?.at && prev.at >= at) at = nowIso(new Date(Date.parse(prev.at) + 1));
    await trx
      .insertInto('chat_turns')
      .values({ id: turnId, session_id: sessionId, prompt, started_at: at, parent_id: parent })
      .execute();
    await trx
      .updateTable('chat_sessions')
      .set({ updated_at: at, head_turn_id: turnId })
      .where('id', '=', sessionId)
      .execute();
  });
}

/** A turn refused before it started (409/503): it leaves no trace, and the head it moved goes back to `head`. */
export async function dropTurn(db: Sql, turnId: string, head?: string | null): Promise<void> {
  await inTransaction(db, async (trx) => {
    const t = await trx
      .selectFrom('chat_turns')
      .select(['session_id', 'parent_id'])
      .where('id', '=', turnId)
      .executeTakeFirst();
    // Turns that continued it (none for a refused turn) continue its parent instead.
    if (t)
      await trx
        .updateTable('chat_turns')
        .set({ parent_id: t.parent_id })
        .where('session_id', '=', t.session_id)
        .where('parent_id', '=', turnId)
        .execute();
    await trx.deleteFrom('chat_tool_calls').where('turn_id', '=', turnId).execute();
    await trx.deleteFrom('chat_turns').where('id', '=', turnId).execute();
    await trx.deleteFrom('connector_approvals').where('turn_id', '=', turnId).execute();
    if (t && head !== undefined)
      await trx
        .updateTable('chat_sessions')
        .set({ head_turn_id: head })
        .where('id', '=', t.session_id)
        .where('head_turn_id', '=', turnId)
        .execute();
  });
}

export async function toolStarted(
  db: Sql,
  turnId: string,
  callId: string,
  tool: string,
  input: unknown,
): Promise<void> {
  await db
    .insertInto('chat_tool_calls')
    .values({ turn_id: turnId, call_id: callId, tool, input: capJson(input ?? {}) ?? '{}', started_at: nowIso() })
    .onConflict((oc) => oc.columns(['turn_id', 'call_id']).doNothing())
    .execute();
}

export async function toolEnded(
  db: Sql,
  turnId: string,
  callId: string,
  tool: string,
  ok: boolean,
  output: unknown,
  error: string | undefined,
  durationMs: number,
): Promise<void> {
  const status = ok ? 'ok' : error === 'cancelled' ? 'cancelled' : 'error';
  const values = {
    status,
    output: capJson(output),
    error: error ?? null,
    duration_ms: Math.round(durationMs),
  } as const;
  await inTransaction(db, async (trx) => {
    const r = await trx
      .updateTable('chat_tool_calls')
      .set(values)
      .where('turn_id', '=', turnId)
      .where('call_id', '=', callId)
      .executeTakeFirst();
    // tool_end without tool_start (should not happen): keep the record anyway.
    if (Number(r.numUpdatedRows) === 0)
      await trx
        .insertInto('chat_tool_calls')
        .values({ turn_id: turnId, call_id: callId, tool, ...values })
        .execute();
  });
}

/**
 * Finish a turn and its tool calls together. Nothing is written when the session is gone
 * (deleted while the turn ran); returns whether the turn was recorded.
 */
export async function endTurn(
  db: Sql,
  turnId: string,
  text: string,
  stopReason: StopReason,
  error?: { code: string; message: string },
  /** False when the caller saw no tool start in this turn: no tool call can still be running. */
  toolsStarted = true,
  /** The items its agent reported (absent: rebuilt from this record when read), and its token usage. */
  extras: { items?: TranscriptItem[]; usage?: TurnUsage } = {},
): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const r = await trx
      .updateTable('chat_turns')
      .set({
        text,
        status: 'done',
        stop_reason: stopReason,
        error_code: error?.code ?? null,
        error_message: error?.message ?? null,
        ended_at: nowIso(),
        items: extras.items ? JSON.stringify(extras.items) : null,
        input_tokens: extras.usage?.input_tokens ?? null,
        output_tokens: extras.usage?.output_tokens ?? null,
      })
      .where('id', '=', turnId)
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) === 0) return false;
    if (!toolsStarted) return true;
    // A tool still "running" when the turn ended never finished.
    await trx
      .updateTable('chat_tool_calls')
      .set({ status: stopReason === 'cancelled' ? 'cancelled' : 'error' })
      .where('turn_id', '=', turnId)
      .where('status', '=', 'running')
      .execute();
    return true;
  });
}

/** The branch shown (or only `turnId`), oldest first, each turn with its tool calls in order and its siblings. */
export async function messages(db: Sql, sessionId: string, turnId?: string): Promise<StoredTurn[]> {
  const nodes = await turnNodes(db, sessionId);
  const ids =
    turnId !== undefined
      ? nodes.some((n) => n.id === turnId)
        ? [turnId]
        : []
      : pathTo(nodes, await headOf(db, sessionId));
  const siblings = siblingsAlong(nodes, ids);
  const turns = await messagesOf(db, sessionId, ids);
  return turns.map(({ items: _items, ...t }) => ({ ...t, siblings: siblings.get(t.turn_id) ?? [t.turn_id] }));
}

/** Turns `ids` of a session in that order, with their tool calls and stored items (internal: the transcript reads these). */
export async function messagesOf(
  db: Sql,
  sessionId: string,
  ids: readonly string[],
): Promise<(StoredTurn & { items?: TranscriptItem[] })[]> {
  if (!ids.length) return [];
  const rows = await db
    .selectFrom('chat_turns')
    .selectAll()
    .where('session_id', '=', sessionId)
    .where('id', 'in', ids)
    .execute();
  const byId = new Map(rows.map((r) => [r.id, r]));
  const turns = ids.flatMap((id) => (byId.has(id) ? [byId.get(id)!] : []));
  const calls = await db.selectFrom('chat_tool_calls').selectAll().where('turn_id', 'in', ids).orderBy('id').execute();
  const byTurn = new Map<string, StoredToolCall[]>();
  for (const c of calls) {
    const list = byTurn.get(c.turn_id) ?? [];
    list.push({
      call_id: c.call_id,
      tool: c.tool,
      input: parseJson(c.input),
      status: c.status,
      ...(c.output !== null ? { output: parseJson(c.output) } : {}),
      ...(c.error !== null ? { error: c.error } : {}),
      duration_ms: c.duration_ms,
      started_at: c.started_at,
    });
    byTurn.set(c.turn_id, list);
  }
  const running = new Set(turns.filter((t) => t.status === 'running').map((t) => t.id));
  const approvals = await turnApprovals(db, sessionId, ids, running);
  return turns.map((t) => {
    const items = parseItems(t.items);
    return {
      turn_id: t.id,
      prompt: t.prompt,
      text: t.text,
      status: t.status,
      stop_reason: t.stop_reason,
      ...(t.error_code ? { error: { code: t.error_code, message: t.error_message ?? '' } } : {}),
      started_at: t.started_at,
      ended_at: t.ended_at,
      tool_calls: byTurn.get(t.id) ?? [],
      parent_id: t.parent_id,
      siblings: [t.id],
      ...(t.input_tokens !== null || t.output_tokens !== null
        ? { usage: { input_tokens: t.input_tokens ?? 0, output_tokens: t.output_tokens ?? 0 } }
        : {}),
      ...(items ? { items } : {}),
      ...(approvals.has(t.id) ? { approvals: approvals.get(t.id) } : {}),
    };
  });
}

/** One stored turn of a session, in the shape of messages(). */
export async function storedTurn(db: Sql, sessionId: string, turnId: string): Promise<StoredTurn | undefined> {
  return (await messages(db, sessionId, turnId))[0];
}

/** A turn's session and the user who owns it, for the admin audit page; undefined when no such turn. */
export async function turnOwner(
  db: Sql,
  turnId: string,
): Promise<{ session_id: string; title: string; user_id: number; username: string | null } | undefined> {
  return db
    .selectFrom('chat_turns as t')
    .innerJoin('chat_sessions as s', 's.id', 't.session_id')
    .leftJoin('users as u', 'u.id', 's.user_id')
    .select(['t.session_id', 's.title', 's.user_id', 'u.username'])
    .where('t.id', '=', turnId)
    .executeTakeFirst();
}

/** Parse a turn's stored items (null when absent or unreadable: the turn is rebuilt instead). */
export function parseItems(raw: string | null): TranscriptItem[] | undefined {
  if (raw === null) return undefined;
  try {
    const r = TranscriptSchema.safeParse(JSON.parse(raw));
    return r.success ? r.data : undefined;
  } catch {
    return undefined; // unreadable: rebuilt from the turn's record
  }
}
