import { randomUUID } from 'node:crypto';
import { nowIso, type Db, type StopReason } from '../core/index.js';
import type { ChatSessionSummary, StoredTurn } from './chat-api.js';

/** Chat history in SQLite (migration 002-chat): sessions owned by a user, turns, tool calls. */

export interface ChatSessionRow {
  id: string;
  user_id: number;
  title: string;
  created_at: string;
  updated_at: string;
}

const MAX_OUTPUT_CHARS = 64 * 1024;
const TITLE_CHARS = 80;
/** Longest title a rename may set. */
export const MAX_TITLE_CHARS = 120;

/** A LIKE pattern matching `q` anywhere, with its wildcards escaped (ESCAPE '\\'). */
function likeAnywhere(q: string): string {
  return `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
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

export class ChatStore {
  constructor(private readonly db: Db) {}

  /** The session if it exists and belongs to the user; undefined otherwise (both read as 404). */
  getOwned(userId: number, sessionId: string): ChatSessionRow | undefined {
    return this.db.prepare('SELECT * FROM chat_sessions WHERE id = ? AND user_id = ?').get(sessionId, userId) as ChatSessionRow | undefined;
  }

  createSession(userId: number, firstMessage: string): ChatSessionRow {
    const id = randomUUID();
    const title = firstMessage.replace(/\s+/g, ' ').trim().slice(0, TITLE_CHARS);
    this.db.prepare('INSERT INTO chat_sessions (id, user_id, title) VALUES (?, ?, ?)').run(id, userId, title);
    return this.getOwned(userId, id)!;
  }

  /**
   * The user's sessions, newest first. With `q`: only those whose title, a prompt or an answer
   * contains it (case-insensitive for ASCII, as SQLite's LIKE).
   */
  listSessions(userId: number, q?: string): Omit<ChatSessionSummary, 'running_turn_id'>[] {
    const filter = q
      ? `AND (s.title LIKE @q ESCAPE '\\' OR EXISTS (SELECT 1 FROM chat_turns m WHERE m.session_id = s.id AND (m.prompt LIKE @q ESCAPE '\\' OR m.text LIKE @q ESCAPE '\\')))`
      : '';
    return this.db
      .prepare(
        `SELECT s.id, s.title, s.created_at, s.updated_at, COUNT(t.id) AS turn_count
           FROM chat_sessions s LEFT JOIN chat_turns t ON t.session_id = s.id
          WHERE s.user_id = @user ${filter} GROUP BY s.id ORDER BY s.updated_at DESC, s.created_at DESC`,
      )
      .all({ user: userId, ...(q ? { q: likeAnywhere(q) } : {}) }) as Omit<ChatSessionSummary, 'running_turn_id'>[];
  }

  rename(sessionId: string, title: string): void {
    this.db.prepare('UPDATE chat_sessions SET title = ? WHERE id = ?').run(title.replace(/\s+/g, ' ').trim().slice(0, MAX_TITLE_CHARS), sessionId);
  }

  /** Delete a session with its turns and tool calls. */
  deleteSession(sessionId: string): void {
    this.db.transaction(() => {
      this.db.prepare('DELETE FROM chat_tool_calls WHERE turn_id IN (SELECT id FROM chat_turns WHERE session_id = ?)').run(sessionId);
      this.db.prepare('DELETE FROM chat_turns WHERE session_id = ?').run(sessionId);
      this.db.prepare('DELETE FROM chat_sessions WHERE id = ?').run(sessionId);
    })();
  }

  /** The session's newest turn (what regenerate and edit replace). */
  lastTurn(sessionId: string): { id: string; status: string } | undefined {
    return this.db.prepare('SELECT id, status FROM chat_turns WHERE session_id = ? ORDER BY started_at DESC, rowid DESC LIMIT 1').get(sessionId) as
      | { id: string; status: string }
      | undefined;
  }

  /** One stored turn of a session, in the shape of messages(). */
  turn(sessionId: string, turnId: string): StoredTurn | undefined {
    return this.messages(sessionId).find((t) => t.turn_id === turnId);
  }

  startTurn(sessionId: string, turnId: string, prompt: string): void {
    const now = nowIso();
    this.db.prepare('INSERT INTO chat_turns (id, session_id, prompt, started_at) VALUES (?, ?, ?, ?)').run(turnId, sessionId, prompt, now);
    this.db.prepare('UPDATE chat_sessions SET updated_at = ? WHERE id = ?').run(now, sessionId);
  }

  /** A turn refused before it started (409/503), or replaced by a regenerated one: it leaves no trace. */
  dropTurn(turnId: string): void {
    this.db.transaction(() => {
      this.db.prepare('DELETE FROM chat_tool_calls WHERE turn_id = ?').run(turnId);
      this.db.prepare('DELETE FROM chat_turns WHERE id = ?').run(turnId);
    })();
  }

  toolStarted(turnId: string, callId: string, tool: string, input: unknown): void {
    this.db
      .prepare('INSERT OR IGNORE INTO chat_tool_calls (turn_id, call_id, tool, input, started_at) VALUES (?, ?, ?, ?, ?)')
      .run(turnId, callId, tool, capJson(input ?? {}) ?? '{}', nowIso());
  }

  toolEnded(turnId: string, callId: string, tool: string, ok: boolean, output: unknown, error: string | undefined, durationMs: number): void {
    const status = ok ? 'ok' : error === 'cancelled' ? 'cancelled' : 'error';
    const r = this.db
      .prepare('UPDATE chat_tool_calls SET status = ?, output = ?, error = ?, duration_ms = ? WHERE turn_id = ? AND call_id = ?')
      .run(status, capJson(output), error ?? null, Math.round(durationMs), turnId, callId);
    if (r.changes === 0) {
      // tool_end without tool_start (should not happen): keep the record anyway.
      this.db
        .prepare('INSERT INTO chat_tool_calls (turn_id, call_id, tool, status, output, error, duration_ms) VALUES (?, ?, ?, ?, ?, ?, ?)')
        .run(turnId, callId, tool, status, capJson(output), error ?? null, Math.round(durationMs));
    }
  }

  endTurn(turnId: string, text: string, stopReason: StopReason, error?: { code: string; message: string }): void {
    const now = nowIso();
    this.db.transaction(() => {
      this.db
        .prepare(`UPDATE chat_turns SET text = ?, status = 'done', stop_reason = ?, error_code = ?, error_message = ?, ended_at = ? WHERE id = ?`)
        .run(text, stopReason, error?.code ?? null, error?.message ?? null, now, turnId);
      // A tool still "running" when the turn ended never finished.
      this.db
        .prepare(`UPDATE chat_tool_calls SET status = ? WHERE turn_id = ? AND status = 'running'`)
        .run(stopReason === 'cancelled' ? 'cancelled' : 'error', turnId);
    })();
  }

  /** Turns of a session, oldest first, each with its tool calls in order. */
  messages(sessionId: string): StoredTurn[] {
    const turns = this.db.prepare('SELECT * FROM chat_turns WHERE session_id = ? ORDER BY started_at, rowid').all(sessionId) as any[];
    const calls = this.db
      .prepare('SELECT c.* FROM chat_tool_calls c JOIN chat_turns t ON t.id = c.turn_id WHERE t.session_id = ? ORDER BY c.id')
      .all(sessionId) as any[];
    const byTurn = new Map<string, any[]>();
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
    return turns.map((t) => ({
      turn_id: t.id,
      prompt: t.prompt,
      text: t.text,
      status: t.status,
      stop_reason: t.stop_reason,
      ...(t.error_code ? { error: { code: t.error_code, message: t.error_message } } : {}),
      started_at: t.started_at,
      ended_at: t.ended_at,
      tool_calls: byTurn.get(t.id) ?? [],
    }));
  }
}
