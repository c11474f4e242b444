/**
 * Chat events as the turn stream carries them, rebuilt field by field from what the sandbox (or
 * the daemon's mail gate) handed over: the sandbox is not trusted, so it cannot send a `done`,
 * an approval, pick its own `seq` or add fields. And a stored turn as the events it emitted (a
 * turn read back after it left memory).
 */
import type { AgentEvent, ChatEvent, DaemonEvent } from '../../core/index.js';
import type { StoredApproval, StoredConnectorApproval, StoredTurn } from '../../core/chat-history.js';

/** Largest text_delta passed on; a sandbox is not trusted to keep lines small. */
const MAX_DELTA_CHARS = 64 * 1024;

/**
 * Rebuild an event from the sandbox field by field: the sandbox is not trusted, so it cannot
 * send a `done`, pick its own `seq` or add fields.
 */
export function sanitize(e: AgentEvent, seq: number): ChatEvent | undefined {
  const x = e as unknown as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  if (x.type === 'text_delta' && typeof x.text === 'string')
    return { type: 'text_delta', seq, text: x.text.slice(0, MAX_DELTA_CHARS) };
  if (x.type === 'status' && typeof x.text === 'string') {
    const n = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 100 ? v : 0);
    return { type: 'status', seq, text: x.text.slice(0, 200), attempt: n(x.attempt), of: n(x.of) };
  }
  if (x.type === 'tool_progress' && typeof x.text === 'string')
    return {
      type: 'tool_progress',
      seq,
      call_id: str(x.call_id),
      tool: str(x.tool),
      stream: x.stream === 'stderr' ? 'stderr' : 'stdout',
      text: x.text.slice(0, MAX_DELTA_CHARS),
    };
  if (x.type === 'tool_start')
    return {
      type: 'tool_start',
      seq,
      call_id: str(x.call_id),
      tool: str(x.tool),
      input: x.input && typeof x.input === 'object' ? (x.input as Record<string, unknown>) : {},
    };
  if (x.type === 'tool_end')
    return {
      type: 'tool_end',
      seq,
      call_id: str(x.call_id),
      tool: str(x.tool),
      ok: x.ok === true,
      ...(x.output !== undefined ? { output: x.output } : {}),
      ...(typeof x.error === 'string' ? { error: x.error } : {}),
      duration_ms:
        typeof x.duration_ms === 'number' && Number.isFinite(x.duration_ms)
          ? Math.max(0, Math.round(x.duration_ms))
          : 0,
    };
  return undefined;
}

/** The daemon's own events (approvals), checked the same way before they are numbered and kept. */
export function daemonEvent(e: DaemonEvent, seq: number): ChatEvent | undefined {
  const strs = (v: unknown) =>
    Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string').slice(0, 1000) : [];
  if (e.type === 'approval_request' && e.kind === 'connector') {
    // The arguments exactly as the gateway holds them (it made this event): shown, never changed.
    return {
      type: 'approval_request',
      seq,
      kind: 'connector',
      approval_id: e.approval_id,
      call_id: e.call_id,
      connector: { id: String(e.connector.id), label: String(e.connector.label) },
      tool: String(e.tool),
      arguments: e.arguments,
      expires_at: e.expires_at,
    };
  }
  if (e.type === 'approval_request') {
    return {
      type: 'approval_request',
      seq,
      approval_id: e.approval_id,
      call_id: e.call_id,
      recipients: strs(e.recipients),
      ...(e.fields ? { fields: { to: strs(e.fields.to), cc: strs(e.fields.cc), bcc: strs(e.fields.bcc) } } : {}),
      ask: strs(e.ask),
      subject: String(e.subject).slice(0, 998),
      attachments: e.attachments
        .slice(0, 200)
        .map((a) => ({ name: String(a.name).slice(0, 255), size: Number(a.size) || 0 })),
      expires_at: e.expires_at,
      ...(typeof e.repeat_of === 'string' ? { repeat_of: e.repeat_of.slice(0, 40) } : {}),
    };
  }
  if (e.type === 'approval_result')
    return {
      type: 'approval_result',
      seq,
      approval_id: e.approval_id,
      decision: e.decision,
      ...(e.scope ? { scope: e.scope } : {}),
    };
  return undefined;
}

/** A stored approval as the events it emitted: the request (a send without the body it never had) and its decision. */
function approvalEvents(out: ChatEvent[], a: StoredApproval | StoredConnectorApproval): void {
  if (a.kind === 'connector') {
    const { state, created_at, decided_at, ...request } = a;
    out.push({ type: 'approval_request', seq: out.length + 1, ...request, expires_at: decided_at ?? created_at });
    if (state !== 'pending')
      out.push({ type: 'approval_result', seq: out.length + 1, approval_id: a.approval_id, decision: state });
    return;
  }
  out.push({
    type: 'approval_request',
    seq: out.length + 1,
    approval_id: a.approval_id,
    call_id: a.call_id,
    recipients: a.recipients,
    ...(a.fields ? { fields: a.fields } : {}),
    ask: a.ask,
    subject: a.subject,
    attachments: a.attachments,
    expires_at: a.decided_at ?? a.created_at,
  });
  if (a.state !== 'pending')
    out.push({
      type: 'approval_result',
      seq: out.length + 1,
      approval_id: a.approval_id,
      decision: a.state,
      ...(a.scope ? { scope: a.scope } : {}),
    });
}

/** A stored turn as the events it emitted: each tool call (with its approvals), the whole text, then done. */
export function storedEvents(sessionId: string, t: StoredTurn): ChatEvent[] {
  const out: ChatEvent[] = [];
  const approvals = t.approvals ?? [];
  const placed = new Set<string>();
  for (const c of t.tool_calls) {
    out.push({
      type: 'tool_start',
      seq: out.length + 1,
      call_id: c.call_id,
      tool: c.tool,
      input: (c.input && typeof c.input === 'object' ? c.input : {}) as Record<string, unknown>,
    });
    for (const a of approvals)
      if (a.call_id === c.call_id && !placed.has(a.approval_id)) {
        placed.add(a.approval_id);
        approvalEvents(out, a);
      }
    if (c.status !== 'running')
      out.push({
        type: 'tool_end',
        seq: out.length + 1,
        call_id: c.call_id,
        tool: c.tool,
        ok: c.status === 'ok',
        ...(c.output !== undefined ? { output: c.output } : {}),
        ...(c.error !== undefined ? { error: c.error } : c.status === 'cancelled' ? { error: 'cancelled' } : {}),
        duration_ms: c.duration_ms ?? 0,
      });
  }
  for (const a of approvals) if (!placed.has(a.approval_id)) approvalEvents(out, a);
  if (t.text) out.push({ type: 'text_delta', seq: out.length + 1, text: t.text });
  // A turn still "running" in the store but not in this process was cut off by a restart.
  const lost = t.status === 'running';
  out.push({
    type: 'done',
    seq: out.length + 1,
    session_id: sessionId,
    turn_id: t.turn_id,
    stop_reason: lost ? 'error' : (t.stop_reason ?? 'error'),
    ...(lost
      ? { error: { code: 'ERR_CHAT_TURN_LOST', message: 'the server restarted while this turn ran' } }
      : t.error
        ? { error: t.error }
        : {}),
  });
  return out;
}
