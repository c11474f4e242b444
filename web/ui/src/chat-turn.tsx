// One turn of the chat page: the user's message, and the answer as it streams in (text, tool
// rows with their charts, mail sends held for approval), rebuilt from stream events or the
// stored history. chat.tsx owns the page around it (sessions, composer, streaming).
import type { ComponentChildren } from 'preact';
import { useContext, useLayoutEffect, useMemo, useRef } from 'preact/hooks';
import { chartUrl, ShareToken } from './share-token.js';
import type { ChatEvent, StoredTurn, StopReason } from '../../chat-api.js';
import { ShownText, toolErrorSentence } from './error-text.js';
import { renderMarkdown } from './markdown.js';
import { SentFiles } from './chat-files.js';
import { AskCard, connectorApprovalPart, decided, isAsk, type AskPart } from './connector-approval-card.js';
import { asksToConnect, ConnectFromChat } from './connectors.js';
import { ChartBox, findChartSpec } from './chat-chart.js';
import { appendLive, LiveOutput, type ToolPart } from './tool-live.js';
import { isRunPython, PythonBody, PythonFiles, pythonFiles } from './tool-python.js';

/** One piece of an answer, in the order it came: text, or a tool call. */
export type Part = { kind: 'text'; text: string } | AskPart | ToolPart;

export interface ViewTurn {
  /** Unknown until the server names it (a new turn, before its first byte). */
  id: string | null;
  prompt: string;
  startedAt: string;
  endedAt: string | null;
  parts: Part[];
  /** Last event seen (for reattaching with after=SEQ). */
  seq: number;
  running: boolean;
  stopReason?: StopReason | 'interrupted';
  error?: { code: string; message: string };
  /** Shown while the page reconnects to a turn that runs on. */
  notice?: string;
  /** A budget of the user at 80 % or more after this turn (`done.budget.message`, docs/usage.md); not stored. */
  budget?: string;
  /** Its edits and regenerates (the turns with the same parent, itself included), oldest first. */
  siblings?: string[];
  /** Tokens its model calls used. */
  usage?: { input_tokens: number; output_tokens: number };
  /** What the running turn waits on ("The model is not answering, retrying (1 of 3)…"), from `status` events. */
  status?: string;
}

export const fmt = (s: string | null | undefined) => {
  if (!s) return '';
  const d = new Date(s);
  return Number.isNaN(d.getTime()) ? s : d.toLocaleString();
};

export function fromStored(t: StoredTurn): ViewTurn {
  const parts: Part[] = t.tool_calls.map((c) => ({
    kind: 'tool',
    call_id: c.call_id,
    tool: c.tool,
    input: c.input,
    status:
      c.status === 'ok' ? 'ok' : c.status === 'running' ? 'running' : c.status === 'cancelled' ? 'cancelled' : 'failed',
    output: c.output,
    error: c.error,
    duration_ms: c.duration_ms ?? undefined,
  }));
  // Each held send or connector call after the tool call that made it (a send's body is never
  // stored: docs/chat.md#approvals), as it was asked, with where it stands.
  for (const a of t.approvals ?? []) {
    const at = parts.findIndex((p) => p.kind === 'tool' && p.call_id === a.call_id);
    let part: Part;
    if (a.kind === 'connector') {
      const { state, created_at, decided_at, kind: _, ...request } = a;
      part = { ...request, kind: 'connector_approval', expires_at: decided_at ?? created_at, state };
    } else {
      const { state, scope, created_at, decided_at, ...request } = a;
      part = { ...request, kind: 'approval', expires_at: decided_at ?? created_at, state, scope };
    }
    parts.splice(at >= 0 ? at + 1 : parts.length, 0, part);
  }
  if (t.text) parts.push({ kind: 'text', text: t.text });
  return {
    id: t.turn_id,
    prompt: t.prompt,
    startedAt: t.started_at,
    endedAt: t.ended_at,
    parts,
    seq: 0,
    running: t.status === 'running',
    stopReason: t.stop_reason ?? undefined,
    error: t.error,
    siblings: t.siblings,
    usage: t.usage,
  };
}

/** "< 2/3 >": move between a turn's edits and regenerates (shown when it has more than one). */
function BranchSwitch(props: { t: ViewTurn; busy: boolean; onSwitch(turnId: string): void }) {
  const sib = props.t.siblings ?? [];
  const i = props.t.id ? sib.indexOf(props.t.id) : -1;
  if (sib.length < 2 || i < 0) return null;
  return (
    <span class="branch-switch" role="group" aria-label="Versions of this message">
      <button
        type="button"
        class="link"
        disabled={props.busy || i === 0}
        onClick={() => props.onSwitch(sib[i - 1])}
        aria-label="Previous version"
      >
        ‹
      </button>
      <span class="branch-pos">
        {i + 1}/{sib.length}
      </span>
      <button
        type="button"
        class="link"
        disabled={props.busy || i === sib.length - 1}
        onClick={() => props.onSwitch(sib[i + 1])}
        aria-label="Next version"
      >
        ›
      </button>
    </span>
  );
}

const tokens = (n: number) => n.toLocaleString();

/** Apply one stream event to a turn (a new object: Preact compares by identity). */
export function applyEvent(t: ViewTurn, e: ChatEvent): ViewTurn {
  if (e.seq <= t.seq) return t; // already seen (a replay overlapping what we have)
  const parts = t.parts.slice();
  const next: ViewTurn = { ...t, parts, seq: e.seq, notice: undefined, status: undefined };
  if (e.type === 'status') {
    next.status = e.text;
  } else if (e.type === 'text_delta') {
    const last = parts[parts.length - 1];
    if (last?.kind === 'text') parts[parts.length - 1] = { kind: 'text', text: last.text + e.text };
    else parts.push({ kind: 'text', text: e.text });
  } else if (e.type === 'tool_start') {
    parts.push({ kind: 'tool', call_id: e.call_id, tool: e.tool, input: e.input, status: 'running' });
  } else if (e.type === 'tool_progress') {
    parts.forEach(
      (p, i) => p.kind === 'tool' && p.call_id === e.call_id && (parts[i] = { ...p, live: appendLive(p.live, e) }),
    );
  } else if (e.type === 'tool_end') {
    const i = parts.findIndex((p) => p.kind === 'tool' && p.call_id === e.call_id);
    const status = e.ok ? 'ok' : e.error === 'cancelled' ? 'cancelled' : 'failed';
    const upd: Part = {
      kind: 'tool',
      call_id: e.call_id,
      tool: e.tool,
      input: i >= 0 ? (parts[i] as { input: unknown }).input : {},
      status,
      output: e.output,
      error: e.error,
      duration_ms: e.duration_ms,
    };
    if (i >= 0) parts[i] = upd;
    else parts.push(upd);
  } else if (e.type === 'approval_request' && e.kind === 'connector') {
    parts.push(connectorApprovalPart(e));
  } else if (e.type === 'approval_request') {
    parts.push({
      kind: 'approval',
      approval_id: e.approval_id,
      call_id: e.call_id,
      recipients: e.recipients,
      ...(e.fields ? { fields: e.fields } : {}),
      ask: e.ask,
      subject: e.subject,
      attachments: e.attachments,
      expires_at: e.expires_at,
      ...(e.repeat_of ? { repeat_of: e.repeat_of } : {}),
      state: 'pending',
    });
  } else if (e.type === 'approval_result') {
    const i = parts.findIndex((p) => isAsk(p) && p.approval_id === e.approval_id);
    if (i >= 0) parts[i] = decided(parts[i] as AskPart, e);
  } else if (e.type === 'done') {
    next.running = false;
    next.id = e.turn_id;
    next.stopReason = e.stop_reason;
    next.error = e.error;
    next.budget = e.budget?.message;
    next.endedAt = new Date().toISOString();
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i];
      if (p.kind === 'tool' && p.status === 'running')
        parts[i] = { ...p, status: e.stop_reason === 'cancelled' ? 'cancelled' : 'interrupted' };
      if (isAsk(p) && p.state === 'pending') parts[i] = { ...p, state: 'denied' };
    }
  }
  return next;
}

export function answerText(t: ViewTurn): string {
  return t.parts.map((p) => (p.kind === 'text' ? p.text : '')).join('');
}

export async function copyText(text: string, button?: HTMLElement | null): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
    if (button) {
      const old = button.textContent;
      button.textContent = 'Copied';
      setTimeout(() => (button.textContent = old), 1500);
    }
  } catch {
    // No clipboard permission: select nothing, say so.
    if (button) button.textContent = 'Copy failed';
  }
}

/* ---------- pieces of an answer ---------- */

function Markdown({ text }: { text: string }) {
  const ref = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    ref.current?.replaceChildren(renderMarkdown(text));
  }, [text]);
  const onClick = (ev: MouseEvent) => {
    const b = (ev.target as HTMLElement).closest<HTMLElement>('button[data-copy]');
    if (b) void copyText(b.dataset.copy ?? '', b);
  };
  return <div class="markdown" ref={ref} onClick={onClick} />;
}

function parseOutput(o: unknown): unknown {
  if (typeof o === 'string') {
    try {
      return JSON.parse(o);
    } catch {
      return o;
    }
  }
  return o;
}

const STATUS_TEXT = {
  running: 'running…',
  ok: 'done',
  failed: 'failed',
  cancelled: 'cancelled',
  interrupted: 'interrupted',
} as const;

function ToolRow({ p }: { p: Extract<Part, { kind: 'tool' }> }) {
  const out = useMemo(() => parseOutput(p.output), [p.output]);
  const spec = useMemo(
    () => (p.status === 'ok' && p.tool.endsWith('render_chart') ? findChartSpec(out) : null),
    [out, p.status, p.tool],
  );
  const att = out && typeof out === 'object' ? (out as Record<string, unknown>) : null;
  const ca = att?.chart_attachment;
  const file =
    typeof ca === 'string'
      ? ca
      : ca && typeof ca === 'object'
        ? (ca as { filename?: string }).filename
        : (att?.filename as string | undefined);
  const img = p.status === 'ok' && typeof file === 'string' && /^[0-9a-f-]{36}\.png$/i.test(file) ? file : null;
  const statusClass = p.status === 'ok' ? 'ok' : p.status === 'running' ? 'running' : 'failed';
  const share = useContext(ShareToken);
  return (
    <div class="tool-wrap">
      <details
        class="tool"
        data-call={p.call_id}
        data-tool={p.tool}
        data-status={p.status === 'running' ? undefined : p.status}
      >
        <summary>
          <code class="tool-name">{p.tool}</code>
          <span class={`status ${statusClass}`}>{STATUS_TEXT[p.status]}</span>
          <span class="muted">
            {p.duration_ms !== undefined && p.status !== 'running' ? `${p.duration_ms} ms` : ''}
          </span>
        </summary>
        <div class="body">
          <div class="muted">Input</div>
          <pre>{JSON.stringify(p.input, null, 2)}</pre>
          {p.status !== 'running' && (
            <>
              <div class="muted">{p.error ? 'Error' : 'Output'}</div>
              <pre>{p.error ?? (typeof out === 'string' ? out : JSON.stringify(out, null, 2))}</pre>
            </>
          )}
        </div>
      </details>
      {isRunPython(p.tool) && (
        <PythonBody
          input={p.input}
          status={p.status}
          error={p.error}
          stdout={typeof att?.stdout === 'string' ? att.stdout : undefined}
        />
      )}
      {isRunPython(p.tool) && p.status === 'ok' && (
        <PythonFiles files={pythonFiles(out)} url={(name) => chartUrl(share, name)} />
      )}
      {p.status === 'running' && <LiveOutput text={p.live} />}
      {p.status === 'failed' && p.error && <p class="tool-error">{toolErrorSentence(p.error)}</p>}
      {p.status === 'failed' && p.error && asksToConnect(p.error) && !share && <ConnectFromChat tool={p.tool} />}
      {spec && <ChartBox spec={spec} />}
      {img && (
        <img class="attachment" src={chartUrl(share, img)} alt={`Chart attachment ${img}`} data-attachment={img} />
      )}
    </div>
  );
}

interface TurnProps {
  t: ViewTurn;
  last: boolean;
  busy: boolean;
  onRegenerate(): void;
  onEdit(): void;
  onSwitch(turnId: string): void;
  /** The chat the turn belongs to (the approval card fetches a held send's message with it). */
  sessionId?: string | null;
  /** Shown at the end of a finished answer's line (the feedback buttons, chat-feedback.tsx). */
  extra?: ComponentChildren;
  onDecide(id: string, decision: 'approve' | 'deny', scope: 'once' | 'recipient'): Promise<void>;
}

/** Why an ended answer stopped short (its error, or a sentence for the stop reason), or null when it ended normally. */
function problemOf(t: ViewTurn) {
  return t.stopReason && t.stopReason !== 'end_turn'
    ? t.error
      ? t.error
      : t.stopReason === 'cancelled'
        ? 'Stopped.'
        : t.stopReason === 'max_steps'
          ? 'The assistant took the most steps one answer may take, so it stopped here.'
          : 'This answer ended early.'
    : null;
}

/** The user's message of a turn: the prompt, its files, time, Copy, Edit and the branch switch. */
function UserMessage({
  t,
  last,
  busy,
  onEdit,
  onSwitch,
}: Pick<TurnProps, 't' | 'last' | 'busy' | 'onEdit' | 'onSwitch'>) {
  const copyPromptRef = useRef<HTMLButtonElement>(null);
  const ended = !t.running;
  return (
    <div class="msg user" data-turn={t.id ?? ''}>
      <div class="bubble">{t.prompt}</div>
      <SentFiles prompt={t.prompt} />
      <div class="msg-meta">
        <time dateTime={t.startedAt}>{fmt(t.startedAt)}</time>
        <button
          type="button"
          class="link"
          ref={copyPromptRef}
          onClick={() => void copyText(t.prompt, copyPromptRef.current)}
          aria-label="Copy your message"
        >
          Copy
        </button>
        {ended && !busy && t.id && (
          <button
            type="button"
            class={`link ${last ? 'edit-last' : 'edit'}`}
            onClick={onEdit}
            aria-label="Edit this message and send it again"
          >
            Edit
          </button>
        )}
        <BranchSwitch t={t} busy={busy} onSwitch={onSwitch} />
      </div>
    </div>
  );
}

/** The line under an ended answer: time, Copy, Regenerate, the tokens and `extra`. */
function AnswerMeta({ t, busy, onRegenerate, extra }: Pick<TurnProps, 't' | 'busy' | 'onRegenerate' | 'extra'>) {
  const text = answerText(t);
  const copyRef = useRef<HTMLButtonElement>(null);
  return (
    <div class="msg-meta">
      {t.endedAt && <time dateTime={t.endedAt}>{fmt(t.endedAt)}</time>}
      {text && (
        <button
          type="button"
          class="link copy-answer"
          ref={copyRef}
          onClick={() => void copyText(text, copyRef.current)}
          aria-label="Copy the answer"
        >
          Copy
        </button>
      )}
      {!busy && t.id && (
        <button type="button" class="link regenerate" onClick={onRegenerate} aria-label="Regenerate this answer">
          Regenerate
        </button>
      )}
      {t.usage && (
        <span class="tokens" title="Tokens the model read and wrote for this answer">
          {tokens(t.usage.input_tokens)} in · {tokens(t.usage.output_tokens)} out tokens
        </span>
      )}
      {extra}
    </div>
  );
}

export function Turn(props: TurnProps) {
  const { t } = props;
  const ended = !t.running;
  const problem = problemOf(t);
  return (
    <>
      <UserMessage t={t} last={props.last} busy={props.busy} onEdit={props.onEdit} onSwitch={props.onSwitch} />
      <div
        class="msg assistant"
        data-done={ended ? (t.stopReason ?? 'end_turn') : undefined}
        aria-busy={t.running ? 'true' : undefined}
      >
        {t.parts.map((p, i) =>
          p.kind === 'text' ? (
            <Markdown key={`t${i}`} text={p.text} />
          ) : isAsk(p) ? (
            <AskCard key={p.approval_id} p={p} sessionId={props.sessionId} onDecide={props.onDecide} />
          ) : (
            <ToolRow key={p.call_id || `c${i}`} p={p} />
          ),
        )}
        {t.running && !t.parts.length && !t.status && <p class="muted thinking">Working…</p>}
        {t.running && t.status && (
          <p class="muted turn-status" role="status">
            {t.status}
          </p>
        )}
        {(t.notice ?? t.budget) && (
          <div class="banner info" role="status">
            {t.notice ?? t.budget}
          </div>
        )}
        {problem && (
          <div
            class={`banner ${t.stopReason === 'cancelled' ? 'info' : 'error'}`}
            role={t.stopReason === 'cancelled' ? 'status' : 'alert'}
          >
            <ShownText s={problem} />
          </div>
        )}
        {ended && <AnswerMeta t={t} busy={props.busy} onRegenerate={props.onRegenerate} extra={props.extra} />}
      </div>
    </>
  );
}
