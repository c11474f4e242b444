/**
 * The user's approval of a connector tool marked ask (docs/connectors.md "Approval binding"): the
 * egress gateway holds the call and asks through ConnectorApprovals.approve; an
 * `approval_request` (kind `connector`: the connector, the tool, the exact arguments) goes into
 * the running turn, and the chat's Approve / Deny (POST …/approvals/:id, the same route as a mail
 * send's) settles it, as does the timeout or the turn's end. One approval is bound to one tool
 * call: a second tools/call under an approved call id is refused without a card, and with
 * ERR_CONNECTOR_APPROVAL_MISMATCH when its arguments differ. Each held call is kept with its turn
 * (connector_approvals: the request, then the decision), so the chat shows the card after a reload.
 */
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { AppError, type Logger } from '../../core/index.js';
import type { ApprovalDecider, ApprovalDecision, DaemonEvent } from '../../core/sandbox-protocol.js';
import { logAction } from '../../domain/action-log.js';
import { decideConnectorAsk, recordConnectorAsk } from '../../domain/chat/approvals.js';
import type { Sql } from '../../domain/db/index.js';
import type { ConnectorApprover } from './connector-gateway.js';

/** How long a held connector call waits for the user (the agent's tool call waits as long). */
export const CONNECTOR_APPROVAL_TIMEOUT_MS = 5 * 60_000;
/** Decided approvals remembered (per daemon) so a late second click says "already decided". */
const DECIDED_KEPT = 1000;

interface Pending {
  sessionId: string;
  userId: number;
  settle(decision: 'approved' | 'denied' | 'timed_out'): void;
}

export class ConnectorApprovals implements ApprovalDecider {
  readonly #pending = new Map<string, Pending>();
  readonly #decided = new Map<string, { sessionId: string; userId: number; state: string }>();
  /** The arguments approved per session and tool call id: one approval, one forwarded call. */
  readonly #used = new Map<string, Map<string, unknown>>();

  constructor(private readonly o: { db: Sql; log: Logger; timeoutMs?: number }) {}

  /** Whether `approvalId` is a connector call this daemon holds or decided (the chat's decider picks by it). */
  owns(approvalId: string): boolean {
    return this.#pending.has(approvalId) || this.#decided.has(approvalId);
  }

  readonly approve: ConnectorApprover = async (a) => {
    const { turn } = a;
    const used = a.callId ? this.#used.get(a.sessionId)?.get(a.callId) : undefined;
    if (used !== undefined) {
      const same = isDeepStrictEqual(used, a.arguments);
      return same
        ? {
            allow: false,
            code: 'ERR_CONNECTOR_APPROVAL_DENIED',
            message: 'this tool call was already approved and made once; an approval is for one call',
          }
        : {
            allow: false,
            code: 'ERR_CONNECTOR_APPROVAL_MISMATCH',
            message: 'the arguments differ from the ones the user approved for this tool call',
          };
    }
    if (!turn?.onDaemonEvent || turn.turnId !== a.turnId || turn.userId !== a.userId || turn.signal.aborted)
      return { allow: false, message: 'only a call made during a chat turn can be approved' };
    const id = randomUUID();
    // Kept with the turn first (the card after a reload): a call that cannot be kept is not asked about.
    try {
      await recordConnectorAsk(this.o.db, {
        id,
        sessionId: turn.sessionId,
        turnId: turn.turnId,
        callId: a.callId,
        userId: turn.userId,
        connector: a.connector,
        tool: a.tool,
        arguments: a.arguments,
      });
    } catch (err) {
      this.o.log.error({ err: (err as Error).message }, 'connector approval not kept');
      return { allow: false, message: 'the approval could not be kept; try again' };
    }
    const timeoutMs = this.o.timeoutMs ?? CONNECTOR_APPROVAL_TIMEOUT_MS;
    const emit = (e: DaemonEvent) => {
      try {
        turn.onDaemonEvent!(e);
      } catch (err) {
        this.o.log.warn({ err: (err as Error).message }, 'approval event could not be delivered');
      }
    };
    const decision = await new Promise<'approved' | 'denied' | 'timed_out'>((resolve) => {
      const settle = (d: 'approved' | 'denied' | 'timed_out') => {
        if (!this.#pending.delete(id)) return;
        clearTimeout(timer);
        turn.signal.removeEventListener('abort', onAbort);
        this.#remember(id, { sessionId: turn.sessionId, userId: turn.userId, state: d });
        resolve(d);
      };
      const timer = setTimeout(() => settle('timed_out'), timeoutMs);
      timer.unref();
      // A stopped turn takes its question with it.
      const onAbort = () => settle('denied');
      turn.signal.addEventListener('abort', onAbort, { once: true });
      // Decided from the turn's chat (its id is the sandbox session's under `airlock serve`).
      this.#pending.set(id, { sessionId: turn.sessionId, userId: turn.userId, settle });
      emit({
        type: 'approval_request',
        kind: 'connector',
        approval_id: id,
        call_id: a.callId,
        connector: a.connector,
        tool: a.tool,
        arguments: a.arguments,
        expires_at: new Date(Date.now() + timeoutMs).toISOString(),
      });
    });
    if (decision === 'approved' && a.callId) {
      const m = this.#used.get(a.sessionId) ?? new Map<string, unknown>();
      m.set(a.callId, structuredClone(a.arguments));
      this.#used.set(a.sessionId, m);
    }
    await decideConnectorAsk(this.o.db, id, decision).catch((err: unknown) =>
      this.o.log.error({ err: (err as Error).message }, 'connector approval decision not kept'),
    );
    await logAction(this.o.db, {
      event: `connector.call_${decision}`,
      actorId: a.userId,
      subjectId: a.userId,
      // Never the arguments: they may hold anything the model wrote.
      data: {
        session_id: a.sessionId,
        turn_id: a.turnId,
        call_id: a.callId,
        approval_id: id,
        connector: a.connector.id,
        tool: a.tool,
      },
    }).catch((err: unknown) => this.o.log.error({ err: (err as Error).message }, 'connector approval not logged'));
    emit({ type: 'approval_result', approval_id: id, decision });
    if (decision === 'approved') return { allow: true };
    return { allow: false, message: decision === 'denied' ? 'the user denied it' : 'nobody approved it in time' };
  };

  async decide(d: ApprovalDecision): Promise<{ decision: 'approved'; scope: 'once' } | { decision: 'denied' }> {
    const p = this.#pending.get(d.approvalId);
    if (!p || p.sessionId !== d.sessionId || p.userId !== d.userId) {
      const done = this.#decided.get(d.approvalId);
      if (done && done.sessionId === d.sessionId && done.userId === d.userId)
        throw new AppError('ERR_APPROVAL_DECIDED', `this call was already decided (${done.state.replace('_', ' ')})`);
      throw new AppError('ERR_APPROVAL_NOT_FOUND', 'no such pending approval in this chat session');
    }
    // A connector approval is for this one call: a `recipient` scope means nothing here.
    p.settle(d.decision === 'approve' ? 'approved' : 'denied');
    return d.decision === 'approve' ? { decision: 'approved', scope: 'once' } : { decision: 'denied' };
  }

  /** A session's sandbox ended: its held calls are denied, its approved call ids forgotten. */
  sessionEnded(sessionId: string): void {
    this.#used.delete(sessionId);
    for (const p of this.#pending.values()) if (p.sessionId === sessionId) p.settle('denied');
  }

  #remember(id: string, v: { sessionId: string; userId: number; state: string }): void {
    this.#decided.set(id, v);
    if (this.#decided.size > DECIDED_KEPT) this.#decided.delete(this.#decided.keys().next().value!);
  }
}

/** The chat's one decider: a connector call this daemon holds, else a mail send (domain/mail/gate.ts). */
export function approvalDecider(mail: ApprovalDecider, connectors: ConnectorApprovals): ApprovalDecider {
  return {
    decide: (d) => (connectors.owns(d.approvalId) ? connectors.decide(d) : mail.decide(d)),
    ...(mail.preview ? { preview: mail.preview.bind(mail) } : {}),
  };
}
