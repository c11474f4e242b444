/**
 * The sandbox is a cache of the conversation; the store holds it (docs/chat.md "The conversation
 * belongs to the service"). Each prompt names the turn it continues (`base`); the runner remembers
 * which turn a live agent last ran (`contextHead`) and sends the stored branch along only when it
 * does not know the agent holds `base`: a new or replaced sandbox, a restarted agent, a daemon that
 * restarted and adopted it, an edit or a branch switch. An agent that finds it does not hold `base`
 * after all (its process restarted behind the runner's back) answers ERR_AGENT_CONTEXT_STALE before
 * doing anything, and the prompt goes again with the context. The warm path sends only the prompt.
 */
import type { PromptContext, TurnRequest, TurnResult } from '../../core/sandbox-protocol.js';

/** What a runner knows of a live agent's conversation: the turn it ends with (undefined: unknown). */
export interface ContextHolder {
  contextHead?: string | null;
}

/** Run one turn through `run`, handing the agent its conversation when it may not hold it. */
export async function runWithContext(
  holder: ContextHolder,
  req: TurnRequest,
  run: (ctx: PromptContext) => Promise<TurnResult>,
): Promise<TurnResult> {
  if (!req.context) return run({});
  const base = req.base ?? null;
  const full = async (): Promise<PromptContext> => ({ base, context: await req.context!() });
  let ctx: PromptContext = holder.contextHead === base ? { base } : await full();
  let r = await run(ctx);
  if (r.stop_reason === 'error' && r.error?.code === 'ERR_AGENT_CONTEXT_STALE' && !ctx.context && !req.signal.aborted) {
    ctx = await full();
    r = await run(ctx);
  }
  // The agent holds this turn now only if it reported it whole; otherwise the next turn brings the branch.
  holder.contextHead = r.items ? req.turnId : undefined;
  return r;
}
