/**
 * A chat's turns form a tree (migration 012): each turn continues its `parent_id`, so an edit of a
 * user message or a regenerate of an answer is a sibling of the turn it replaces, and the old
 * branch stays. The chat's `head_turn_id` is the newest turn of the branch shown; the branch is
 * the path from the first turn to it. The model's context is exactly that branch
 * (docs/chat.md "Branches").
 */
import type { Sql } from '../db/index.js';

/** One turn as the tree sees it. */
export interface TurnNode {
  id: string;
  parent_id: string | null;
  started_at: string;
}

/** A chat's turns, oldest first (the order siblings are numbered in). */
export async function turnNodes(db: Sql, sessionId: string): Promise<TurnNode[]> {
  return db
    .selectFrom('chat_turns')
    .select(['id', 'parent_id', 'started_at'])
    .where('session_id', '=', sessionId)
    .orderBy('started_at')
    .orderBy('id')
    .execute();
}

/** The chat's head turn (null: no turn yet). */
export async function headOf(db: Sql, sessionId: string): Promise<string | null> {
  const r = await db.selectFrom('chat_sessions').select('head_turn_id').where('id', '=', sessionId).executeTakeFirst();
  return r?.head_turn_id ?? null;
}

export async function setHead(db: Sql, sessionId: string, head: string | null): Promise<void> {
  await db.updateTable('chat_sessions').set({ head_turn_id: head }).where('id', '=', sessionId).execute();
}

/** The branch ending at `head`: turn ids from the first to `head` (empty for null or an unknown id). */
export function pathTo(nodes: readonly TurnNode[], head: string | null): string[] {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const out: string[] = [];
  const seen = new Set<string>();
  for (let id = head; id !== null && byId.has(id) && !seen.has(id); id = byId.get(id)!.parent_id) {
    seen.add(id);
    out.push(id);
  }
  return out.reverse();
}

/** The turns that continue `parent` (null: the chat's first turns), oldest first. */
export function childrenOf(nodes: readonly TurnNode[], parent: string | null): string[] {
  return nodes.filter((n) => n.parent_id === parent).map((n) => n.id);
}

/** The newest turn below `from` following the newest child at each step: where a branch switch lands. */
export function newestLeaf(nodes: readonly TurnNode[], from: string): string {
  let id = from;
  for (let guard = 0; guard <= nodes.length; guard++) {
    const kids = childrenOf(nodes, id);
    if (!kids.length) return id;
    id = kids[kids.length - 1];
  }
  return id;
}

/** Siblings of each turn of a path, by turn id (each list includes the turn, oldest first). */
export function siblingsAlong(nodes: readonly TurnNode[], path: readonly string[]): Map<string, string[]> {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const out = new Map<string, string[]>();
  for (const id of path) out.set(id, childrenOf(nodes, byId.get(id)?.parent_id ?? null));
  return out;
}
