/**
 * The model-facing transcript of a chat's branch, from the store (docs/chat.md "The conversation
 * belongs to the service"). A turn keeps the items its agent reported at its end; a turn without
 * them (its sandbox was lost mid-turn, the server restarted, or it predates migration 012) is
 * rebuilt from what the store has of it: the prompt, each tool call with its result, the text, and
 * how it ended. The result is bounded: whole turns past the context budget are left out with a
 * marker, and never more than MAX_CONTEXT_BYTES go to a sandbox in one prompt.
 */
import type { StoredTurn } from '../../core/chat-history.js';
import {
  boundToolResult,
  closeToolCalls,
  fitToBudget,
  type TranscriptItem,
  type TurnUsage,
} from '../../core/transcript.js';
import type { Sql } from '../db/index.js';
import { headOf, pathTo, turnNodes } from './branches.js';
import { messagesOf } from './store.js';

/** Most bytes of context sent with one prompt (the protocol's lines are capped at 4 MiB). */
export const MAX_CONTEXT_BYTES = 3 * 1024 * 1024;

/** A stored turn's items as its agent reported them, else rebuilt from the store. */
export function turnItems(t: StoredTurn & { items?: TranscriptItem[] }): TranscriptItem[] {
  if (t.items) return t.items;
  const out: TranscriptItem[] = [{ role: 'user', content: t.prompt }];
  for (const c of t.tool_calls) {
    const input =
      c.input && typeof c.input === 'object' && !Array.isArray(c.input) ? (c.input as Record<string, unknown>) : {};
    out.push({ role: 'assistant', text: '', toolCalls: [{ id: c.call_id, name: c.tool, input }] });
    const ok = c.status === 'ok';
    const content = ok ? JSON.stringify(c.output ?? null) : (c.error ?? unfinishedResult(c));
    out.push({ role: 'tool', callId: c.call_id, name: c.tool, content: boundToolResult(content), isError: !ok });
  }
  const interrupted =
    t.status === 'running' || t.stop_reason === 'error'
      ? 'error'
      : t.stop_reason === 'cancelled'
        ? 'stopped'
        : undefined;
  if (t.text || interrupted)
    out.push({ role: 'assistant', text: t.text, toolCalls: [], ...(interrupted ? { interrupted } : {}) });
  return out;
}

/**
 * What the model is told of a tool call that has no result in the store. A call still `running`
 * when its turn was cut off (the sandbox or the server went away) may have taken effect — a mail
 * may have left — so the model is told the outcome is unknown, never that it failed, lest it
 * repeat the call.
 */
function unfinishedResult(c: StoredTurn['tool_calls'][number]): string {
  if (c.status === 'cancelled') return 'cancelled by the user';
  if (c.status === 'running')
    return 'the outcome of this call is unknown: the turn was cut off while it ran, and it may have taken effect (a mail may have been sent); check before doing it again';
  return 'the tool failed';
}

/**
 * The branch ending at `head` (default: the chat's head) as the model sees it, every tool call
 * with its result, cut to `budget` tokens by whole turns and to MAX_CONTEXT_BYTES.
 */
export async function branchTranscript(
  db: Sql,
  sessionId: string,
  budget: number,
  head?: string | null,
  maxBytes = MAX_CONTEXT_BYTES,
): Promise<TranscriptItem[]> {
  const end = head === undefined ? await headOf(db, sessionId) : head;
  if (end === null) return [];
  const path = pathTo(await turnNodes(db, sessionId), end);
  const turns = await messagesOf(db, sessionId, path);
  const items = closeToolCalls(turns.flatMap((t) => turnItems(t)));
  let fitted = fitToBudget(items, budget).items;
  // A budget set very high could still make a prompt line past the protocol's cap: cut further.
  for (let b = budget; b > 1000 && Buffer.byteLength(JSON.stringify(fitted)) > maxBytes;) {
    b = Math.floor(b * 0.8);
    fitted = fitToBudget(items, b).items;
  }
  return fitted;
}

/** Token usage summed over turns. */
export function sumUsage(turns: readonly { usage?: TurnUsage }[]): TurnUsage {
  return turns.reduce(
    (a, t) => ({
      input_tokens: a.input_tokens + (t.usage?.input_tokens ?? 0),
      output_tokens: a.output_tokens + (t.usage?.output_tokens ?? 0),
    }),
    { input_tokens: 0, output_tokens: 0 },
  );
}
