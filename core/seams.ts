/**
 * The daemon-internal seams: declared here so the runtime, the proxy/token area, the chat area
 * and the mail gate can be built apart and wired together in daemon/serve.ts. Types only.
 */
import type { AgentEvent, DaemonEvent, StopReason, ProfileRoute, MailPolicy, ControlMessage, ProxyDecisionRecord } from './sandbox-protocol.js';

/** One chat turn in a session's sandbox. Implemented by the daemon's session manager. */
export interface TurnRequest {
  userId: number;
  /** Chat session id (also the sandbox's `airlock.session` label). */
  sessionId: string;
  turnId: string;
  prompt: string;
  /** Aborted when the client disconnects: the turn is cancelled in the sandbox. */
  signal: AbortSignal;
  /** Called for each agent event as it happens (the caller numbers them). */
  onEvent(e: AgentEvent): void;
  /**
   * The daemon's own events of the turn (a send held for approval, its result), numbered with the
   * agent's. Absent: nobody can be asked, so a send that needs approval is refused.
   */
  onDaemonEvent?(e: DaemonEvent): void;
}

export interface TurnResult {
  stop_reason: StopReason;
  error?: { code: string; message: string };
  containerId?: string;
}

export interface TurnRunner {
  /**
   * Run one turn. Throws AppError before any event for: ERR_SESSION_BUSY (409, a turn is
   * already running in this session), ERR_SESSION_CAPACITY (503, host limit reached).
   * Failures after the turn started resolve with stop_reason 'error' and a coded error.
   */
  runTurn(req: TurnRequest): Promise<TurnResult>;
}

/** What a session needs at start (issue: proxy, tokens, overlay). */
export interface PreparedSession {
  routes: ProfileRoute[];
  tokens: Record<string, string>;
  placeholders: Record<string, string>;
  agentUserToken?: string;
  agentEnv: Record<string, string>;
  /** host:port pairs the egress gateway lets this session reach. */
  egressAllow: string[];
  /** The user's send policy, applied by the proxy to mail sends. */
  mailPolicy?: MailPolicy;
}

export interface SessionPreparer {
  prepare(req: { userId: number; sessionId: string; proxyPort: number }): Promise<PreparedSession>;
}

/** A held mail send as the daemon receives it (the supervisor's `mail_hold`). */
export type MailHold = Extract<ControlMessage, { type: 'mail_hold' }>;
/** The daemon's answer to a held send. */
export type MailHoldRelease = { allow: true } | { allow: false; code: string; message: string };

/**
 * The daemon's side of the proxy: the audit trail of every proxied request, and the decision on
 * every held send (per-hour limit, the policy again, and for `ask` the user in the running turn).
 */
export interface SandboxAuditor {
  proxied(s: { sessionId: string; userId: number }, d: ProxyDecisionRecord): void;
  hold(s: { sessionId: string; userId: number; turn?: TurnRequest }, h: MailHold): Promise<MailHoldRelease>;
  /** A session's sandbox ended: its pending approvals are refused, its per-session approvals forgotten. */
  sessionEnded(sessionId: string): void;
}

/** The user's answer to an `approval_request` (POST /api/chat/sessions/:id/approvals/:approvalId). */
export interface ApprovalDecision {
  userId: number;
  sessionId: string;
  approvalId: string;
  decision: 'approve' | 'deny';
  /** `recipient`: also every later send to the same recipients in this session. */
  scope: 'once' | 'recipient';
}

/** What the chat routes need: decide a pending approval (throws ERR_APPROVAL_NOT_FOUND / ERR_APPROVAL_DECIDED). */
export interface ApprovalDecider {
  decide(d: ApprovalDecision): Promise<{ decision: 'approved'; scope: 'once' | 'recipient' } | { decision: 'denied' }>;
}

/** The daemon's egress gateway: one unix socket per session, CONNECT only to allowed host:port. */
export interface EgressGateway {
  open(sessionId: string, socketPath: string, allow: string[]): Promise<EgressHandle>;
}
export interface EgressHandle {
  update(allow: string[]): void;
  close(): Promise<void>;
}
