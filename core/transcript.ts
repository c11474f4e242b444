/**
 * A chat's transcript: the model-facing items of the branch a user sees, provider-neutral. The
 * service stores them per turn (domain/chat) and hands them to the agent as its context; the agent
 * maps them to each provider's request with the official SDKs' types (agent/models/). Types and
 * their zod schemas only: no I/O here (docs/chat.md "The conversation belongs to the service").
 */
import { z } from 'zod';

/** A tool call the model asked for. */
export interface TranscriptToolCall {
  id: string;
  name: string;
  input: Record<string, unknown>;
}

/**
 * How an answer ended before the model finished it: `stopped` (the user pressed Stop; the partial
 * text the user saw is kept) or `error` (the model, a tool or the sandbox failed).
 */
export type Interruption = 'stopped' | 'error';

export type TranscriptItem =
  | { role: 'user'; content: string }
  | { role: 'assistant'; text: string; toolCalls: TranscriptToolCall[]; interrupted?: Interruption }
  | { role: 'tool'; callId: string; name: string; content: string; isError: boolean };

/** Token counts one turn's model calls used, as the provider reported them. */
export interface TurnUsage {
  input_tokens: number;
  output_tokens: number;
}

/** Longest tool result kept in the transcript (characters); longer ones are cut with a marker. */
export const MAX_TOOL_RESULT_CHARS = 16_000;
/** Most items one turn may report (a runaway loop cannot flood the store). */
export const MAX_TURN_ITEMS = 1_000;

const JsonObject = z.record(z.string(), z.unknown());

export const TranscriptItemSchema: z.ZodType<TranscriptItem> = z.union([
  z.object({ role: z.literal('user'), content: z.string() }),
  z.object({
    role: z.literal('assistant'),
    text: z.string(),
    toolCalls: z.array(z.object({ id: z.string().max(200), name: z.string().max(200), input: JsonObject })).max(128),
    interrupted: z.enum(['stopped', 'error']).optional(),
  }),
  z.object({
    role: z.literal('tool'),
    callId: z.string().max(200),
    name: z.string().max(200),
    content: z.string(),
    isError: z.boolean(),
  }),
]);

export const TranscriptSchema = z.array(TranscriptItemSchema).max(100_000);
export const TurnItemsSchema = z.array(TranscriptItemSchema).max(MAX_TURN_ITEMS);
export const TurnUsageSchema: z.ZodType<TurnUsage> = z.object({
  input_tokens: z.number().int().min(0),
  output_tokens: z.number().int().min(0),
});

/** A tool result bounded for the transcript: past the cap it is cut, and says so. */
export function boundToolResult(text: string, max = MAX_TOOL_RESULT_CHARS): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}\n[… the result was cut here: ${text.length - max} more characters were not kept]`;
}

/** The sentence an interrupted answer ends with in the model's context. */
export function interruptionNote(i: Interruption): string {
  return i === 'stopped' ? '[The user stopped this answer here.]' : '[This answer ended early with an error.]';
}

/**
 * Every tool call in `items` has its result right after its assistant item (results for calls
 * that never got one are added, as errors), so any cut at a user item leaves a well-formed
 * request. Returns a new array.
 */
export function closeToolCalls(items: readonly TranscriptItem[], why = 'not run: the turn ended'): TranscriptItem[] {
  const out: TranscriptItem[] = [];
  let open: TranscriptToolCall[] = [];
  const flush = () => {
    for (const c of open) out.push({ role: 'tool', callId: c.id, name: c.name, content: why, isError: true });
    open = [];
  };
  for (const it of items) {
    if (it.role === 'tool') {
      const i = open.findIndex((c) => c.id === it.callId);
      if (i < 0) continue; // a result without its call: dropped (never orphaned)
      open.splice(i, 1);
      out.push(it);
      continue;
    }
    flush();
    out.push(it);
    if (it.role === 'assistant') open = [...it.toolCalls];
  }
  flush();
  return out;
}

/**
 * A rough token count, the same on every side (documented in docs/chat.md "Context budget"): four
 * characters a token, plus four tokens an item for the role and framing. Tokenizers differ by
 * model; the budget is meant with headroom, not to the last token.
 */
export function estimateTokens(items: readonly TranscriptItem[]): number {
  let chars = 0;
  for (const it of items) {
    if (it.role === 'user') chars += it.content.length;
    else if (it.role === 'tool') chars += it.content.length + it.name.length;
    else {
      chars += it.text.length;
      for (const c of it.toolCalls) chars += c.name.length + JSON.stringify(c.input).length;
    }
  }
  return Math.ceil(chars / 4) + 4 * items.length;
}

/** The marker the model sees where older turns were left out. */
export function omittedNote(turns: number): string {
  return `[${turns} earlier turn${turns === 1 ? ' was' : 's were'} left out of this conversation to fit the model's context budget.]`;
}

/**
 * The newest whole turns of `items` (a turn starts at a user item) that fit `budget` tokens beside
 * `fixed` (the system prompt and tool definitions). The newest turn is always kept. When turns are
 * left out, the first kept user item starts with omittedNote(n): the model knows. Never cuts inside
 * a turn, so a tool call and its result stay together.
 */
export function fitToBudget(
  items: readonly TranscriptItem[],
  budget: number,
  fixed = 0,
): { items: TranscriptItem[]; omitted: number } {
  const starts: number[] = [];
  items.forEach((it, i) => {
    if (it.role === 'user' || i === 0) starts.push(i);
  });
  let keepFrom = items.length;
  let used = fixed;
  for (let g = starts.length - 1; g >= 0; g--) {
    const end = g + 1 < starts.length ? starts[g + 1] : items.length;
    const cost = estimateTokens(items.slice(starts[g], end));
    if (keepFrom < items.length && used + cost > budget) break;
    used += cost;
    keepFrom = starts[g];
  }
  const omitted = starts.filter((s) => s < keepFrom).length;
  const kept = items.slice(keepFrom);
  if (!omitted) return { items: [...kept], omitted: 0 };
  const first = kept[0];
  const note = omittedNote(omitted);
  const head: TranscriptItem =
    first?.role === 'user' ? { role: 'user', content: `${note}\n\n${first.content}` } : { role: 'user', content: note };
  return { items: first?.role === 'user' ? [head, ...kept.slice(1)] : [head, ...kept], omitted };
}

/**
 * A turn stopped at its whole-turn bound (AIRLOCK_TURN_TIMEOUT_S) ends as the error
 * ERR_TURN_TIMEOUT, never as `cancelled`: the user did not stop it. The agent's own deadline
 * (agent/turn-deadline.ts) and the daemon's backstop (daemon/runtime/turn.ts) both say it so.
 * Its items stay; a last answer marked as stopped by the user is marked as ended by an error.
 */
export function turnTimedOut(
  limitMs: number,
  items?: readonly TranscriptItem[],
): { error: { code: 'ERR_TURN_TIMEOUT'; message: string }; items?: TranscriptItem[] } {
  const limit = limitMs >= 60_000 ? `${Math.round(limitMs / 60_000)} min` : `${Math.round(limitMs / 1000)} s`;
  const error = { code: 'ERR_TURN_TIMEOUT' as const, message: `the turn ran longer than ${limit} and was stopped` };
  if (!items) return { error };
  const last = items.length - 1;
  return {
    error,
    items: items.map((it, i) =>
      i === last && it.role === 'assistant' && it.interrupted === 'stopped'
        ? { ...it, interrupted: 'error' as const }
        : it,
    ),
  };
}
