import type { AgentEvent, StopReason } from '../core/sandbox-protocol.js';
import { isAppError } from '../core/errors.js';
import type { ToolHost } from './mcp.js';
import type { Message, ModelAdapter, ToolCall } from './types.js';

export interface TurnOutcome {
  stop_reason: StopReason;
  error?: { code: string; message: string };
}

export interface AgentOptions {
  model: ModelAdapter;
  tools: Pick<ToolHost, 'defs' | 'call'>;
  system: string;
  maxSteps: number;
  toolTimeoutMs: number;
}

/**
 * The agent loop. The conversation lives here for the life of the warm process, so later
 * prompts in the session see the earlier turns. One turn: call the model, run the tools it
 * asks for (one after another, tool_start before each runs, tool_end after), feed the
 * results back, until the model answers without tools or max_steps model calls were made.
 */
export class Agent {
  readonly history: Message[] = [];
  constructor(private readonly opts: AgentOptions) {}

  async runTurn(prompt: string, emit: (e: AgentEvent) => void, signal: AbortSignal): Promise<TurnOutcome> {
    this.history.push({ role: 'user', content: prompt });
    const tools = this.opts.tools.defs();
    try {
      for (let step = 0; step < this.opts.maxSteps; step++) {
        if (signal.aborted) return { stop_reason: 'cancelled' };
        const reply = await this.opts.model.complete(
          { system: this.opts.system, messages: this.history, tools, signal, onStatus: (s) => emit({ type: 'status', ...s }) },
          (text) => emit({ type: 'text_delta', text }),
        );
        this.history.push({ role: 'assistant', text: reply.text, toolCalls: reply.toolCalls });
        if (!reply.toolCalls.length) return { stop_reason: 'end_turn' };
        for (const call of reply.toolCalls) {
          if (signal.aborted) return { stop_reason: 'cancelled' };
          await this.runTool(call, emit, signal);
        }
      }
      return { stop_reason: 'max_steps' };
    } catch (err) {
      if (signal.aborted) return { stop_reason: 'cancelled' };
      if (isAppError(err)) return { stop_reason: 'error', error: { code: err.code, message: err.message } };
      return { stop_reason: 'error', error: { code: 'ERR_AGENT_INTERNAL', message: 'the agent failed' } };
    } finally {
      this.closeOpenCalls(signal.aborted ? 'cancelled by the user' : 'not run: the turn ended');
    }
  }

  private async runTool(call: ToolCall, emit: (e: AgentEvent) => void, signal: AbortSignal): Promise<void> {
    emit({ type: 'tool_start', call_id: call.id, tool: call.name, input: call.input });
    const t0 = performance.now();
    const ms = () => Math.round(performance.now() - t0);
    try {
      const r = await this.opts.tools.call(call.name, call.input, signal, this.opts.toolTimeoutMs, call.id);
      emit({ type: 'tool_end', call_id: call.id, tool: call.name, ok: r.ok, ...(r.ok ? { output: r.output } : { error: r.error }), duration_ms: ms() });
      this.history.push({ role: 'tool', callId: call.id, name: call.name, content: r.text, isError: !r.ok });
    } catch (err) {
      // Only a cancel rejects: close the tool in the stream, then let the turn end.
      emit({ type: 'tool_end', call_id: call.id, tool: call.name, ok: false, error: 'cancelled', duration_ms: ms() });
      this.history.push({ role: 'tool', callId: call.id, name: call.name, content: 'Cancelled by the user.', isError: true });
      throw err;
    }
  }

  /** Every tool call in the history gets a result, so the next turn's request is well-formed. */
  private closeOpenCalls(why: string): void {
    for (let i = this.history.length - 1; i >= 0; i--) {
      const m = this.history[i];
      if (m.role === 'user') return;
      if (m.role !== 'assistant') continue;
      const answered = new Set(this.history.slice(i + 1).flatMap((x) => (x.role === 'tool' ? [x.callId] : [])));
      for (const c of m.toolCalls) {
        if (!answered.has(c.id)) this.history.push({ role: 'tool', callId: c.id, name: c.name, content: why, isError: true });
      }
      return;
    }
  }
}
