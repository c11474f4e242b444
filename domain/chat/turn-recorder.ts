/**
 * One running turn's events on their way out (docs/chat.md "Chat stream"): each event the runner
 * hands over is checked (domain/chat/events.ts), numbered — the agent's and the daemon's in one
 * sequence, seq 1, 2, 3 … with no gaps — put in the live-turn registry for its readers, and what
 * the store keeps of it (tool calls, a sent mail's action-log entry) written one write after
 * another in the order of the events. The turn's end (domain/chat/turn-service.ts) waits for them.
 */
import type { AgentEvent, ChatEvent, DaemonEvent, Logger } from '../../core/index.js';
import { logAction } from '../action-log.js';
import type { Sql } from '../db/index.js';
import { daemonEvent, sanitize } from './events.js';
import type { LiveTurn, TurnRegistry } from './live-turns.js';
import * as store from './store.js';

export class TurnRecorder {
  /** The last seq given out (0: none yet). */
  seq = 0;
  /** The answer's text so far (the text_deltas joined). */
  text = '';
  /** Mails the turn sent (send_email calls that ended ok): its usage (docs/usage.md). */
  mails = 0;
  /** Each tool call's input by call id (a sent mail's recipients are counted from it). */
  private readonly inputs = new Map<string, Record<string, unknown>>();
  private writes: Promise<void> = Promise.resolve();

  constructor(
    private readonly sql: Sql,
    private readonly live: TurnRegistry,
    private readonly turn: LiveTurn,
    private readonly log: Logger,
  ) {}

  /** Whether the turn started a tool (its end then also ends the tools still running). */
  get usedTools(): boolean {
    return this.inputs.size > 0;
  }

  /** How many tool calls the turn started (its usage). */
  get toolCalls(): number {
    return this.inputs.size;
  }

  /** Queue a store write after the ones before it; a failed write is logged, never thrown. */
  write(what: string, fn: () => Promise<unknown>): void {
    this.writes = this.writes.then(fn).then(
      () => undefined,
      (err: unknown) => this.log.error({ err }, `could not record ${what}`),
    );
  }

  /** Every write queued so far has ended. */
  settled(): Promise<void> {
    return this.writes;
  }

  /** Hand an event to the readers with the next seq (after the turn's end: dropped). */
  push(e: ChatEvent): void {
    this.seq = e.seq;
    this.live.push(this.turn, e);
  }

  /** An agent event from the sandbox (not trusted: rebuilt field by field). */
  readonly onEvent = (raw: AgentEvent): void => {
    if (this.turn.finished) return;
    const e = sanitize(raw, this.seq + 1);
    if (!e) {
      this.log.warn('sandbox sent an unknown event; dropped');
      return;
    }
    if (e.type === 'text_delta') this.text += e.text;
    else if (e.type === 'tool_start') {
      this.inputs.set(e.call_id, e.input);
      const { turnId } = this.turn;
      this.write('a chat event', () => store.toolStarted(this.sql, turnId, e.call_id, e.tool, e.input));
    } else if (e.type === 'tool_end') this.toolEnded(e);
    this.push(e);
  };

  /** Approvals (a send held at the proxy): numbered with the agent's events, kept with the turn. */
  readonly onDaemonEvent = (raw: DaemonEvent): void => {
    if (this.turn.finished) return;
    const e = daemonEvent(raw, this.seq + 1);
    if (e) this.push(e);
  };

  private toolEnded(e: Extract<ChatEvent, { type: 'tool_end' }>): void {
    const { turnId, sessionId, userId } = this.turn;
    const input = this.inputs.get(e.call_id);
    if (e.ok && e.tool === 'send_email') this.mails++;
    this.write('a chat event', () =>
      // A sent mail's log entry and its tool call's end are one change.
      store.inTransaction(this.sql, async (trx) => {
        await store.toolEnded(trx, turnId, e.call_id, e.tool, e.ok, e.output, e.error, e.duration_ms);
        if (e.ok && e.tool === 'send_email') await logMailSent(trx, userId, sessionId, turnId, input);
      }),
    );
  }
}

/** The action log gets how many recipients a sent mail had, never its addresses or body. */
async function logMailSent(
  db: Sql,
  userId: number,
  sessionId: string,
  turnId: string,
  input: Record<string, unknown> | undefined,
): Promise<void> {
  const count = (v: unknown) =>
    Array.isArray(v) ? v.length : typeof v === 'string' && v.trim() ? v.split(',').length : 0;
  const recipients = count(input?.to) + count(input?.cc) + count(input?.bcc);
  await logAction(db, {
    event: 'chat.mail_sent',
    actorId: userId,
    subjectId: userId,
    data: { session_id: sessionId, turn_id: turnId, recipients },
  });
}
