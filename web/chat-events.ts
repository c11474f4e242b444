/**
 * Chat events as the turn stream carries them, rebuilt field by field from what the sandbox (or
 * the daemon's mail gate) handed over: the sandbox is not trusted, so it cannot send a `done`,
 * an approval, pick its own `seq` or add fields.
 */
import type { AgentEvent, ChatEvent, DaemonEvent } from '../core/index.js';

/** Largest text_delta passed on; a sandbox is not trusted to keep lines small. */
const MAX_DELTA_CHARS = 64 * 1024;

/**
 * Rebuild an event from the sandbox field by field: the sandbox is not trusted, so it cannot
 * send a `done`, pick its own `seq` or add fields.
 */
export function sanitize(e: AgentEvent, seq: number): ChatEvent | undefined {
  const x = e as unknown as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  if (x.type === 'text_delta' && typeof x.text === 'string') return { type: 'text_delta', seq, text: x.text.slice(0, MAX_DELTA_CHARS) };
  if (x.type === 'status' && typeof x.text === 'string') {
    const n = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 100 ? v : 0);
    return { type: 'status', seq, text: x.text.slice(0, 200), attempt: n(x.attempt), of: n(x.of) };
  }
  if (x.type === 'tool_start')
    return { type: 'tool_start', seq, call_id: str(x.call_id), tool: str(x.tool), input: x.input && typeof x.input === 'object' ? (x.input as Record<string, unknown>) : {} };
  if (x.type === 'tool_end')
    return {
      type: 'tool_end',
      seq,
      call_id: str(x.call_id),
      tool: str(x.tool),
      ok: x.ok === true,
      ...(x.output !== undefined ? { output: x.output } : {}),
      ...(typeof x.error === 'string' ? { error: x.error } : {}),
      duration_ms: typeof x.duration_ms === 'number' && Number.isFinite(x.duration_ms) ? Math.max(0, Math.round(x.duration_ms)) : 0,
    };
  return undefined;
}

/** The daemon's own events (approvals), checked the same way before they are numbered and kept. */
export function daemonEvent(e: DaemonEvent, seq: number): ChatEvent | undefined {
  const strs = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string').slice(0, 1000) : []);
  if (e.type === 'approval_request') {
    return {
      type: 'approval_request',
      seq,
      approval_id: e.approval_id,
      call_id: e.call_id,
      recipients: strs(e.recipients),
      ask: strs(e.ask),
      subject: String(e.subject).slice(0, 998),
      attachments: e.attachments.slice(0, 200).map((a) => ({ name: String(a.name).slice(0, 255), size: Number(a.size) || 0 })),
      expires_at: e.expires_at,
      ...(typeof e.repeat_of === 'string' ? { repeat_of: e.repeat_of.slice(0, 40) } : {}),
    };
  }
  if (e.type === 'approval_result') return { type: 'approval_result', seq, approval_id: e.approval_id, decision: e.decision, ...(e.scope ? { scope: e.scope } : {}) };
  return undefined;
}
