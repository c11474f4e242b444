/**
 * What a session's sandbox reports besides its turns: the in-container proxy's decisions
 * (counted in /metrics, refusals logged, each one kept by the auditor) and the mail sends its
 * egress gateway holds (decided by the auditor, domain/mail/gate.ts).
 */
import type { Logger, Metrics } from '../../core/index.js';
import type { MailHold, MailHoldRelease, SandboxAuditor } from '../../core/sandbox-protocol.js';
import type { ProxyDecisionMessage } from './sandbox-client.js';
import type { Sandbox } from './sandbox.js';

export class SandboxAudit {
  constructor(private readonly o: { log: Logger; metrics?: Metrics; auditor?: SandboxAuditor }) {}

  /** The in-container proxy's decisions: counted in /metrics, refusals logged with the session. */
  proxyDecision(sb: Sandbox, d: ProxyDecisionMessage): void {
    const route = typeof d.route === 'string' && /^[a-z0-9_-]{1,32}$/.test(d.route) ? d.route : 'none';
    const outcome =
      d.outcome === 'forwarded' || d.outcome === 'refused' || d.outcome === 'upstream_error' ? d.outcome : 'refused';
    this.o.metrics?.proxyDecisions.inc({ route, outcome });
    if (outcome !== 'forwarded') {
      const code = typeof d.code === 'string' && /^ERR_[A-Z_]{1,40}$/.test(d.code) ? d.code : undefined;
      this.o.log.warn(
        {
          sessionId: sb.sessionId,
          containerId: sb.containerId.slice(0, 12),
          route,
          outcome,
          status: Number(d.status) || 0,
          code,
        },
        'sandbox proxy refused a request',
      );
    }
    if (sb.sessionId && sb.userId !== undefined)
      this.o.auditor?.proxied({ sessionId: sb.sessionId, userId: sb.userId }, d);
  }

  /** A mail send the egress gateway holds: decided by the auditor (domain/mail/gate.ts). */
  async mailHold(sb: Sandbox, h: MailHold): Promise<MailHoldRelease> {
    const { log, auditor } = this.o;
    if (!sb.sessionId || sb.userId === undefined)
      return { allow: false, code: 'ERR_MAIL_APPROVAL_UNAVAILABLE', message: 'this sandbox has no session' };
    if (!auditor)
      return h.verdict === 'allow'
        ? { allow: true }
        : { allow: false, code: 'ERR_MAIL_APPROVAL_UNAVAILABLE', message: 'this server cannot ask for approvals' };
    try {
      return await auditor.hold({ sessionId: sb.sessionId, userId: sb.userId, turn: sb.turn, calls: sb.calls }, h);
    } catch (err) {
      log.error({ sessionId: sb.sessionId, err: (err as Error).message }, 'a held mail send could not be decided');
      return {
        allow: false,
        code: 'ERR_MAIL_APPROVAL_UNAVAILABLE',
        message: 'the send could not be checked; try again',
      };
    }
  }
}
