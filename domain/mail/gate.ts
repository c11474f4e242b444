/**
 * The daemon's side of the send policy and the audit trail (docs/proxy.md#send-policy).
 *
 * The in-sandbox proxy refuses what the policy blocks and holds every other send; the supervisor
 * relays the hold here. For each hold this gate: re-reads the user's policy (a change applies at
 * once, and a proxy with an older policy is checked again), reserves one of the user's hourly
 * slots atomically across sessions and nodes (domain/mail/store.ts reserveHold: a held send keeps its
 * slot while it waits, a denied or timed-out one gives it back), and for `ask` puts an `approval_request` into the running turn
 * and waits for the user's decision (POST …/approvals/:id), the timeout, or the turn's end. Every
 * hold and its decision is a row of `mail_holds` and an action-log entry; every proxied request is
 * a row of `proxy_requests`. Bodies, tokens and placeholders never reach either.
 */
import { AppError, type Config, type Logger } from '../../core/index.js';
import type {
  ApprovalDecider,
  ApprovalDecision,
  ApprovalLookup,
  DaemonEvent,
  HoldContext,
  MailHold,
  MailPreview,
  MailHoldRelease,
  ProxyDecisionRecord,
  SandboxAuditor,
  TurnRequest,
} from '../../core/sandbox-protocol.js';
import { judge } from '../../core/mail-policy.js';
import { logAction } from '../action-log.js';
import {
  decideHold,
  findRepeat,
  getHold,
  insertHold,
  mailPolicyFor,
  recordProxyRequest,
  reserveHold,
  type HoldState,
  type NewHold,
} from './store.js';
import type { Sql } from '../db/index.js';
import { PreviewIncomplete } from './preview.js';

interface Pending {
  sessionId: string;
  userId: number;
  asked: string[];
  /** What the user sees before deciding (domain/mail/preview.ts); in memory only, gone with the hold. */
  preview: MailPreview;
  settle: (decision: 'approved' | 'denied' | 'timed_out', scope: 'once' | 'recipient' | null) => void;
}

export class MailGate implements SandboxAuditor, ApprovalDecider {
  private readonly pending = new Map<string, Pending>();
  /** Recipients approved "for this session", per session. */
  private readonly approvedFor = new Map<string, Set<string>>();
  /** Audit rows are written one after another, off the request's path. */
  private writes: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Sql,
    private readonly config: Readonly<Config>,
    private readonly log: Logger,
  ) {}

  proxied(s: { sessionId: string; userId: number }, d: ProxyDecisionRecord): void {
    this.writes = this.writes
      .then(() =>
        recordProxyRequest(this.db, { ...d, sessionId: s.sessionId, userId: s.userId, nodeId: this.config.node.id }),
      )
      .catch((err: unknown) => this.log.error({ err: (err as Error).message }, 'could not record a proxied request'));
  }

  /** Audit rows written so far are in the database (tests, shutdown). */
  flushed(): Promise<void> {
    return this.writes;
  }

  /** Holds being decided, by id: a hold the supervisor re-sends (a new connection) gets the same answer. */
  private readonly waiting = new Map<string, Promise<MailHoldRelease>>();

  hold(s: HoldContext, h: MailHold): Promise<MailHoldRelease> {
    const same = this.waiting.get(h.hold_id);
    if (same) return same;
    const p = this.judgeHold(s, h).finally(() => this.waiting.delete(h.hold_id));
    this.waiting.set(h.hold_id, p);
    return p;
  }

  private async judgeHold(s: HoldContext, h: MailHold): Promise<MailHoldRelease> {
    const base = {
      id: h.hold_id,
      sessionId: s.sessionId,
      userId: s.userId,
      nodeId: this.config.node.id,
      turnId: h.turn_id,
      callId: h.call_id,
      summary: h.summary,
    };
    const refuse = async (
      state: HoldState,
      code: string,
      message: string,
      asked: string[] = h.ask,
    ): Promise<MailHoldRelease> => {
      await insertHold(this.db, { ...base, verdict: h.verdict, asked, state, code });
      await this.audit(s, 'mail.refused', h, { code });
      return { allow: false, code, message };
    };
    if (await getHold(this.db, h.hold_id)) {
      // Re-sent by the supervisor after a daemon restart: its question died with that daemon.
      return {
        allow: false,
        code: 'ERR_MAIL_APPROVAL_UNAVAILABLE',
        message: 'the server restarted while this send waited; send it again',
      };
    }
    // The call the send claims (X-Airlock-Call, set inside the sandbox) must be a send_email call
    // the turn is running, and one that made no send yet (core/turn-calls.ts, docs/security.md).
    if (h.call_id) {
      const claim = s.calls ? await s.calls.claim(h.call_id, 'send_email') : 'unbound';
      if (claim === 'reused')
        return refuse(
          'refused',
          'ERR_MAIL_CALL_REUSED',
          'this send_email call already made its one send; a second send under it is refused',
        );
      if (claim === 'unbound')
        return refuse(
          'refused',
          'ERR_MAIL_CALL_UNBOUND',
          'this send names no send_email call the chat turn is running',
        );
    }
    const policy = await mailPolicyFor(this.db, this.config.mail, s.userId);
    // The policy as it is now: stricter than the sandbox's copy wins.
    const now = judge(policy, h.summary);
    if (now.verdict === 'block') return refuse('refused', 'ERR_MAIL_BLOCKED', now.reason, []);
    const sinceIso = new Date(Date.now() - 3600_000).toISOString();
    // The same message sent from this chat within the hour (a model retrying a send whose outcome it
    // never learnt, e.g. after a crash): sent again only when the user says so, whatever the policy.
    const repeat = await findRepeat(this.db, s.sessionId, h.summary, sinceIso);
    const asked = repeat
      ? h.summary.recipients
      : [...new Set([...(h.verdict === 'ask' ? h.ask : []), ...(now.verdict === 'ask' ? now.ask : [])])];
    const fine = repeat ? undefined : this.approvedFor.get(s.sessionId);
    const stillAsked = asked.filter((r) => !fine?.has(r));
    // The hourly slot is reserved before anyone is asked (an approval cannot get past the limit);
    // a held send keeps it while it waits, and gives it back when it is denied or times out.
    const hold: NewHold =
      stillAsked.length === 0
        ? {
            ...base,
            verdict: h.verdict,
            asked,
            state: asked.length ? 'approved' : 'sent',
            scope: asked.length ? 'recipient' : null,
          }
        : { ...base, verdict: 'ask', asked: stillAsked, state: 'pending' };
    if (!(await reserveHold(this.db, hold, policy.max_per_hour, sinceIso))) {
      return refuse(
        'refused',
        'ERR_MAIL_RATE_LIMITED',
        `at most ${policy.max_per_hour} messages per hour may be sent; try again later`,
      );
    }
    if (stillAsked.length === 0) return { allow: true };
    const turn = s.turn;
    if (!turn?.onDaemonEvent || turn.turnId !== h.turn_id || turn.signal.aborted) {
      await decideHold(this.db, h.hold_id, 'refused', null, 'ERR_MAIL_APPROVAL_UNAVAILABLE');
      await this.audit(s, 'mail.refused', h, { code: 'ERR_MAIL_APPROVAL_UNAVAILABLE' });
      return {
        allow: false,
        code: 'ERR_MAIL_APPROVAL_UNAVAILABLE',
        message: repeat
          ? `the same message (same recipients, subject and attachments) was already sent from this chat at ${repeat.created_at}; it is sent again only with the user's approval, during a chat turn`
          : "this send needs the user's approval, and only a send made during a chat turn can be approved",
      };
    }
    // Only a send_email call of this turn can be asked about: a send naming none gets no card.
    const unasked = !h.call_id
      ? {
          code: 'ERR_MAIL_CALL_UNBOUND',
          message:
            "this send needs the user's approval, and only a send made by a send_email call of the chat turn can be approved",
        }
      : this.readPreview(h);
    if ('code' in unasked) {
      await decideHold(this.db, h.hold_id, 'refused', null, unasked.code);
      await this.audit(s, 'mail.refused', h, { code: unasked.code });
      return { allow: false, ...unasked };
    }
    return this.ask(s, h, turn, stillAsked, policy.approval_timeout_s, unasked, repeat?.created_at);
  }

  /** Ask the user about a hold already recorded as `pending`, and record the decision. */
  private async ask(
    s: { sessionId: string; userId: number },
    h: MailHold,
    turn: TurnRequest,
    asked: string[],
    timeoutS: number,
    preview: MailPreview,
    repeatOf?: string,
  ): Promise<MailHoldRelease> {
    const timeoutMs = timeoutS * 1000;
    const emit = (e: DaemonEvent) => {
      try {
        turn.onDaemonEvent!(e);
      } catch (err) {
        this.log.warn({ err: (err as Error).message }, 'approval event could not be delivered');
      }
    };
    {
      const outcome = await new Promise<{
        decision: 'approved' | 'denied' | 'timed_out';
        scope: 'once' | 'recipient' | null;
      }>((resolve) => {
        const settle = (decision: 'approved' | 'denied' | 'timed_out', scope: 'once' | 'recipient' | null) => {
          if (!this.pending.delete(h.hold_id)) return;
          clearTimeout(timer);
          turn.signal.removeEventListener('abort', onAbort);
          resolve({ decision, scope });
        };
        const timer = setTimeout(() => settle('timed_out', null), timeoutMs);
        timer.unref();
        // A stopped turn takes its question with it.
        const onAbort = () => settle('denied', null);
        turn.signal.addEventListener('abort', onAbort, { once: true });
        this.pending.set(h.hold_id, { sessionId: s.sessionId, userId: s.userId, asked, preview, settle });
        emit({
          type: 'approval_request',
          approval_id: h.hold_id,
          call_id: h.call_id,
          recipients: h.summary.recipients,
          ...(h.summary.fields ? { fields: h.summary.fields } : {}),
          ask: asked,
          subject: h.summary.subject,
          attachments: h.summary.attachments,
          expires_at: new Date(Date.now() + timeoutMs).toISOString(),
          ...(repeatOf ? { repeat_of: repeatOf } : {}),
        });
      });
      const state = outcome.decision === 'approved' ? 'approved' : outcome.decision;
      const code =
        outcome.decision === 'denied'
          ? 'ERR_MAIL_DENIED'
          : outcome.decision === 'timed_out'
            ? 'ERR_MAIL_APPROVAL_TIMEOUT'
            : null;
      await decideHold(this.db, h.hold_id, state, outcome.scope, code);
      if (outcome.decision === 'approved' && outcome.scope === 'recipient') {
        const set = this.approvedFor.get(s.sessionId) ?? new Set<string>();
        for (const r of asked) set.add(r);
        this.approvedFor.set(s.sessionId, set);
      }
      await this.audit(
        s,
        outcome.decision === 'approved'
          ? 'mail.approved'
          : outcome.decision === 'denied'
            ? 'mail.denied'
            : 'mail.approval_timed_out',
        h,
        { scope: outcome.scope },
      );
      emit({
        type: 'approval_result',
        approval_id: h.hold_id,
        decision: outcome.decision,
        ...(outcome.scope ? { scope: outcome.scope } : {}),
      });
      if (outcome.decision === 'approved') return { allow: true };
      return outcome.decision === 'denied'
        ? { allow: false, code: 'ERR_MAIL_DENIED', message: 'the user did not approve this message; it was not sent' }
        : {
            allow: false,
            code: 'ERR_MAIL_APPROVAL_TIMEOUT',
            message: 'nobody approved this message in time; it was not sent',
          };
    }
  }

  /**
   * The message of a held send, read once before the user is asked. One the card cannot show
   * faithfully (domain/mail/preview.ts), or cannot read at all, is refused: never approved on a
   * partial preview.
   */
  private readPreview(h: MailHold): MailPreview | { code: string; message: string } {
    const code = 'ERR_MAIL_PREVIEW_INCOMPLETE';
    try {
      const p = h.preview?.();
      if (p) return p;
    } catch (err) {
      if (err instanceof PreviewIncomplete)
        return {
          code,
          message: `the approval card cannot show this message faithfully (${err.message}); it was not sent`,
        };
      this.log.warn({ holdId: h.hold_id, err: (err as Error).message }, 'the preview of a held send could not be read');
    }
    return { code, message: 'the approval card cannot show this message; it was not sent' };
  }

  /**
   * The preview of a send still held, for its own user and session only (GET …/approvals/:id/preview).
   * Decided: 410 ERR_APPROVAL_PREVIEW_GONE; anyone else's or unknown: 404, as a missing one.
   */
  async preview(q: ApprovalLookup): Promise<MailPreview> {
    const p = this.pending.get(q.approvalId);
    if (p && p.sessionId === q.sessionId && p.userId === q.userId) {
      return p.preview;
    }
    const row = await getHold(this.db, q.approvalId);
    if (row && row.session_id === q.sessionId && row.user_id === q.userId && row.state !== 'pending') {
      throw new AppError('ERR_APPROVAL_PREVIEW_GONE', 'this send was already decided; its message is no longer kept');
    }
    throw new AppError('ERR_APPROVAL_NOT_FOUND', 'no such pending approval in this chat session');
  }

  async decide(
    d: ApprovalDecision,
  ): Promise<{ decision: 'approved'; scope: 'once' | 'recipient' } | { decision: 'denied' }> {
    const p = this.pending.get(d.approvalId);
    if (!p || p.sessionId !== d.sessionId || p.userId !== d.userId) {
      const row = await getHold(this.db, d.approvalId);
      if (row && row.session_id === d.sessionId && row.user_id === d.userId && row.state !== 'pending') {
        throw new AppError('ERR_APPROVAL_DECIDED', `this send was already decided (${row.state.replace('_', ' ')})`);
      }
      throw new AppError('ERR_APPROVAL_NOT_FOUND', 'no such pending approval in this chat session');
    }
    const decision = d.decision === 'approve' ? 'approved' : 'denied';
    p.settle(decision, decision === 'approved' ? d.scope : null);
    // A deny answers as a deny: a scope belongs to an approval only.
    return decision === 'approved' ? { decision, scope: d.scope } : { decision };
  }

  sessionEnded(sessionId: string): void {
    this.approvedFor.delete(sessionId);
    for (const p of this.pending.values()) if (p.sessionId === sessionId) p.settle('denied', null);
  }

  private async audit(
    s: { sessionId: string; userId: number },
    event: string,
    h: MailHold,
    extra: Record<string, unknown>,
  ): Promise<void> {
    await logAction(this.db, {
      event,
      actorId: s.userId,
      subjectId: s.userId,
      data: {
        session_id: s.sessionId,
        turn_id: h.turn_id,
        call_id: h.call_id,
        hold_id: h.hold_id,
        recipients: h.summary.recipients.length,
        attachments: h.summary.attachments.length,
        ...extra,
      },
    });
  }
}
