import type { AgentEvent, PromptContext, StopReason } from '../core/sandbox-protocol.js';
import { isAppError } from '../core/errors.js';
import {
  boundToolResult,
  closeToolCalls,
  estimateTokens,
  fitToBudget,
  MAX_TURN_ITEMS,
  type TurnUsage,
} from '../core/transcript.js';
import type { ToolHost } from './mcp.js';
import type { Message, ModelAdapter, ToolCall } from './types.js';
import { DELTA_WINDOW_MS, DeltaBatcher } from './delta-batch.js';
import { loadImages, type ImageCache } from './images.js';

export interface TurnOutcome {
  stop_reason: StopReason;
  error?: { code: string; message: string };
  /** What this turn added to the conversation (the user's prompt first), as the service stores it. */
  items: Message[];
  /** Tokens its model calls used, summed, when the provider said. */
  usage?: TurnUsage;
}

export interface AgentOptions {
  model: ModelAdapter;
  tools: Pick<ToolHost, 'defs' | 'call'> & { refresh?(): Promise<void> };
  system: string;
  maxSteps: number;
  toolTimeoutMs: number;
  /** The model's context budget in tokens (core/transcript.ts estimateTokens): older whole turns are left out past it. */
  contextTokens: number;
  /** For a model that takes image input: where the uploads are (agent/images.ts); absent, no image is sent. */
  uploadsDir?: string;
  /** Streamed text coalesces for this long after a delta went out (agent/delta-batch.ts); 0 sends every chunk. */
  deltaWindowMs?: number;
}

/**
 * The agent loop. The conversation is the service's (docs/chat.md "The conversation belongs to
 * the service"): a prompt may bring the stored transcript as `context`, which replaces whatever
 * this process held; otherwise it continues from `head`, the turn it last ran. One turn: call the
 * model with the conversation (cut to the context budget), run the tools it asks for (one after
 * another, tool_start before each runs, tool_end after), feed the results back, until the model
 * answers without tools or max_steps model calls were made. The turn's items go back to the
 * service with its end.
 */
export class Agent {
  history: Message[] = [];
  /** The turn the history ends with; null before any. */
  head: string | null = null;
  constructor(private readonly opts: AgentOptions) {}

  /**
   * Take the conversation a prompt continues: its `context` (the stored branch) replaces the
   * history; without one, false when the agent does not hold the `base` it names.
   */
  adopt(ctx: PromptContext): boolean {
    if (ctx.context) {
      this.history = closeToolCalls(ctx.context);
      this.head = ctx.base ?? null;
      return true;
    }
    return ctx.base === undefined || ctx.base === this.head;
  }

  async runTurn(
    turnId: string,
    prompt: string,
    emitEach: (e: AgentEvent) => void,
    signal: AbortSignal,
  ): Promise<TurnOutcome> {
    const batch = new DeltaBatcher(emitEach, this.opts.deltaWindowMs ?? DELTA_WINDOW_MS);
    const emit = (e: AgentEvent) => batch.event(e);
    const start = this.history.length;
    this.history.push({ role: 'user', content: prompt });
    const usage: TurnUsage = { input_tokens: 0, output_tokens: 0 };
    let counted = false;
    // The text streamed by the model call in progress: kept when the call is stopped or fails.
    let partial = '';
    let out: Omit<TurnOutcome, 'items'>;
    try {
      out = await this.steps(
        emit,
        signal,
        (t) => (partial += t),
        () => (partial = ''),
        (u) => {
          counted = true;
          usage.input_tokens += u.input_tokens;
          usage.output_tokens += u.output_tokens;
        },
      );
    } catch (err) {
      if (signal.aborted) out = { stop_reason: 'cancelled' };
      else if (isAppError(err)) out = { stop_reason: 'error', error: { code: err.code, message: err.message } };
      else out = { stop_reason: 'error', error: { code: 'ERR_AGENT_INTERNAL', message: 'the agent failed' } };
    }
    // The turn's last text goes out before its end.
    batch.flush();
    if (out.stop_reason === 'cancelled' && !signal.aborted) out = { stop_reason: 'cancelled' };
    this.closeOpenCalls(start, out.stop_reason === 'cancelled' ? 'cancelled by the user' : 'not run: the turn ended');
    if (out.stop_reason === 'cancelled' || out.stop_reason === 'error') {
      this.history.push({
        role: 'assistant',
        text: partial,
        toolCalls: [],
        interrupted: out.stop_reason === 'cancelled' ? 'stopped' : 'error',
      });
    }
    this.head = turnId;
    const items = this.history.slice(start, start + MAX_TURN_ITEMS);
    return { ...out, items, ...(counted ? { usage } : {}) };
  }

  /** The model/tool steps of one turn; throws what ends it early. */
  private async steps(
    emit: (e: AgentEvent) => void,
    signal: AbortSignal,
    onText: (t: string) => void,
    onReply: () => void,
    onUsage: (u: TurnUsage) => void,
  ): Promise<Omit<TurnOutcome, 'items'>> {
    await this.opts.tools.refresh?.();
    const tools = this.opts.tools.defs();
    const fixed = estimateTokens([{ role: 'user', content: this.opts.system + JSON.stringify(tools) }]);
    // The turn's images are read and encoded once, not at every step (agent/images.ts).
    const imageCache: ImageCache = new Map();
    for (let step = 0; step < this.opts.maxSteps; step++) {
      if (signal.aborted) return { stop_reason: 'cancelled' };
      const messages = fitToBudget(this.history, this.opts.contextTokens, fixed).items;
      const images = this.opts.uploadsDir
        ? await loadImages(messages, this.opts.uploadsDir, undefined, imageCache)
        : undefined;
      const reply = await this.opts.model.complete(
        {
          system: this.opts.system,
          messages,
          tools,
          signal,
          ...(images?.size ? { images } : {}),
          onStatus: (st) => emit({ type: 'status', ...st }),
        },
        (text) => {
          onText(text);
          emit({ type: 'text_delta', text });
        },
      );
      onReply();
      if (reply.usage) onUsage(reply.usage);
      this.history.push({ role: 'assistant', text: reply.text, toolCalls: reply.toolCalls });
      if (!reply.toolCalls.length) return { stop_reason: 'end_turn' };
      for (const call of reply.toolCalls) {
        if (signal.aborted) return { stop_reason: 'cancelled' };
        await this.runTool(call, emit, signal);
      }
    }
    return { stop_reason: 'max_steps' };
  }

  private async runTool(call: ToolCall, emit: (e: AgentEvent) => void, signal: AbortSignal): Promise<void> {
    emit({ type: 'tool_start', call_id: call.id, tool: call.name, input: call.input });
    const t0 = performance.now();
    const ms = () => Math.round(performance.now() - t0);
    try {
      // A progress message is `stdout\n…` or `stderr\n…` (tools/run-python.ts): the chat's tool_progress.
      const onProgress = (m: string) => {
        const nl = m.indexOf('\n');
        const stream = m.slice(0, nl);
        if (nl > 0 && (stream === 'stdout' || stream === 'stderr'))
          emit({ type: 'tool_progress', call_id: call.id, tool: call.name, stream, text: m.slice(nl + 1) });
      };
      const r = await this.opts.tools.call(call.name, call.input, signal, this.opts.toolTimeoutMs, call.id, onProgress);
      emit({
        type: 'tool_end',
        call_id: call.id,
        tool: call.name,
        ok: r.ok,
        ...(r.ok ? { output: r.output } : { error: r.error }),
        duration_ms: ms(),
      });
      this.history.push({
        role: 'tool',
        callId: call.id,
        name: call.name,
        content: boundToolResult(r.text),
        isError: !r.ok,
      });
    } catch (err) {
      // Only a cancel rejects: close the tool in the stream, then let the turn end.
      emit({ type: 'tool_end', call_id: call.id, tool: call.name, ok: false, error: 'cancelled', duration_ms: ms() });
      this.history.push({
        role: 'tool',
        callId: call.id,
        name: call.name,
        content: 'Cancelled by the user.',
        isError: true,
      });
      throw err;
    }
  }

  /** Every tool call of this turn gets a result, so the next request is well-formed. */
  private closeOpenCalls(start: number, why: string): void {
    const closed = closeToolCalls(this.history.slice(start), why);
    this.history.splice(start, this.history.length - start, ...closed);
  }
}
