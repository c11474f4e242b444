/**
 * The daemon-internal seams: declared here so the runtime, the proxy/token area, the chat area
 * and the mail gate can be built apart and wired together in daemon/serve.ts. Types only.
 */
import type { AgentEvent, DaemonEvent, StopReason, TurnEndExtras } from './sandbox-events.js';
import type { MailPolicy, MailSummary, ProxyDecisionRecord } from './sandbox-control.js';
import type { ProfileRoute } from './sandbox-profile.js';
import type { TranscriptItem } from './transcript.js';
import type { MailPreviewText } from './api-types.js';

/** One chat turn in a session's sandbox. Implemented by the daemon's session manager. */
export interface TurnRequest {
  userId: number;
  /** Chat session id (also the sandbox's `airlock.session` label). */
  sessionId: string;
  turnId: string;
  prompt: string;
  /** The turn this one continues on the chat's branch (null: the first). Absent: the agent keeps what it holds. */
  base?: string | null;
  /**
   * The stored branch up to `base`, model-facing (docs/chat.md): called only when the sandbox may
   * not hold it (new, replaced, restarted, behind). Absent: the runner sends no context.
   */
  context?: () => Promise<TranscriptItem[]>;
  /**
   * The chat's model as `<id>:<version>` (docs/chat.md "A model per chat"): a live sandbox
   * prepared for another is replaced before this turn (and the new one gets the stored
   * conversation). Absent: the sandbox keeps the model it has.
   */
  modelRevision?: string;
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

export interface TurnResult extends TurnEndExtras {
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
  /** Real tokens by env name: held by the egress gateway on the host, never sent into the sandbox. */
  tokens: Record<string, string>;
  placeholders: Record<string, string>;
  agentUserToken?: string;
  agentEnv: Record<string, string>;
  /** host:port pairs the egress gateway lets this session reach. */
  egressAllow: string[];
  /** The user's send policy, applied by the proxy to mail sends. */
  mailPolicy?: MailPolicy;
  /** The revision of the chat's model the session was prepared for (`<id>:<version>`); absent: the config's model. */
  modelRevision?: string;
}

export interface SessionPreparer {
  prepare(req: { userId: number; sessionId: string; proxyPort: number }): Promise<PreparedSession>;
  /**
   * The real tokens (by env name) and send policy of a session that is already running: a sandbox
   * adopted after a daemon restart, whose gateway must hold its tokens again. Absent: none.
   */
  credentials?(req: {
    userId: number;
    sessionId: string;
    tokenEnvs: readonly string[];
    modelRevision?: string;
  }): Promise<{ tokens: Record<string, string>; mailPolicy?: MailPolicy }>;
}

/** A mail send the egress gateway holds until the daemon decides (read on the host from the exact body it forwards). */
export interface MailHold {
  hold_id: string;
  turn_id: string | null;
  call_id: string | null;
  verdict: 'allow' | 'ask';
  ask: string[];
  summary: MailSummary;
  /**
   * The message as the user sees it before deciding (domain/mail/preview.ts), read only when the
   * user is asked; in the daemon's memory only (docs/chat.md#approvals).
   */
  preview?(): MailPreview;
}
/** What the approval card shows of a held send: never stored, bounded (domain/mail/preview.ts). */
export interface MailPreview extends MailPreviewText {
  /** Each attachment; `data` only for images within the limits (the thumbnail's bytes). */
  attachments: { name: string; content_type: string; size: number; data?: Uint8Array }[];
}
/** The daemon's answer to a held send. */
export type MailHoldRelease = { allow: true } | { allow: false; code: string; message: string };

/** The tool calls a turn runs, as a held send is bound to one (core/turn-calls.ts implements it). */
export interface RunningCalls {
  /** `bound`: a running call of `tool` that made no send yet; `reused`: it made one; `unbound`: no such call. */
  claim(callId: string, tool: string): Promise<'bound' | 'unbound' | 'reused'>;
}

/** Whose a held send is, the turn running in that session, and the tool calls it runs. */
export interface HoldContext {
  sessionId: string;
  userId: number;
  turn?: TurnRequest;
  calls?: RunningCalls;
}

/**
 * The daemon's side of the proxy: the audit trail of every proxied request, and the decision on
 * every held send (per-hour limit, the policy again, and for `ask` the user in the running turn).
 */
export interface SandboxAuditor {
  proxied(s: { sessionId: string; userId: number }, d: ProxyDecisionRecord): void;
  /** `calls`: the tool calls the turn runs now (core/turn-calls.ts); absent: none, so no send can be bound to a call. */
  hold(s: HoldContext, h: MailHold): Promise<MailHoldRelease>;
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
  /** The held send's message while it waits (docs/chat.md#approvals); 404 / 410 otherwise. */
  preview?(q: ApprovalLookup): Promise<MailPreview>;
}
/** One held send of one user's chat session. */
export interface ApprovalLookup {
  userId: number;
  sessionId: string;
  approvalId: string;
}

/**
 * What the egress gateway knows of one session: the route table it admits against (method + path
 * allow-lists, upstreams), the real tokens it injects, and the send policy it decides mail by.
 */
export interface EgressSession {
  userId: number;
  routes: ProfileRoute[];
  /** Real tokens by env name (`MAIL_ACCESS_TOKEN`…), as the routes' `token_ref` name them. */
  tokens: Record<string, string>;
  mailPolicy?: MailPolicy;
  /** Decide a mail send the policy did not block (per-hour limit, approval). Absent: `allow` goes, `ask` is refused. */
  hold?(h: MailHold): Promise<MailHoldRelease>;
  /** The turn now running in the session (recorded with a held send). */
  currentTurn?(): string | null;
  /** The running turn itself, for a connector call held for approval (its events reach the chat). */
  turn?(): TurnRequest | undefined;
}

/**
 * The daemon's egress gateway: one unix socket per session; the second wall. It admits each
 * plain-HTTP request of the in-sandbox proxy again against the session's route table, injects
 * the real credential, opens verified TLS to the upstream and scrubs the answer.
 */
export interface EgressGateway {
  open(sessionId: string, socketPath: string, session: EgressSession): Promise<EgressHandle>;
}
export interface EgressHandle {
  /** Replace real tokens by env name (rotation); names not given keep their value. */
  setTokens(tokens: Record<string, string>): void;
  close(): Promise<void>;
}
