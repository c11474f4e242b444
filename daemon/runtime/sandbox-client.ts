/**
 * The daemon's end of one sandbox's control socket (<session folder>/run/control.sock on the host,
 * /run/airlock/control.sock in the container; the supervisor listens). NDJSON requests with ids,
 * replies matched by id, turn events delivered to the turn's listener. Every line the
 * supervisor writes is checked against ControlMessageSchema; a bad one is logged (code and
 * failing fields, never the payload) and dropped.
 */
import { randomUUID } from 'node:crypto';
import { createConnection, type Socket } from 'node:net';
import { AppError, appErrorFromPeer, createLogger, type Logger } from '../../core/index.js';
import {
  ControlMessageSchema,
  SupervisorStatusSchema,
  type AgentEvent,
  type ControlMessage,
  type ControlRequest,
  type StopReason,
  type TurnEndExtras,
  type SupervisorStatus,
} from '../../core/sandbox-protocol.js';
import { checkMessage, protocolLogFields, readMessages, writeMessage } from '../../core/ndjson.js';

const REQUEST_TIMEOUT_MS = 30_000;
/** Pause between connect attempts while the supervisor starts. */
const CONNECT_RETRY_MS = 3;

let fallbackLog: Logger | undefined;
/**
 * Where rejections go when the caller passed no logger: warnings as JSON lines on stderr (a
 * protocol rejection is never silent). The session manager should pass its own.
 */
function defaultLog(): Logger {
  return (fallbackLog ??= createLogger({ level: 'warn', destination: process.stderr, name: 'sandbox-client' }));
}

// Distributive Omit so each request variant keeps its own fields.
type DistributiveOmit<T, K extends keyof T> = T extends unknown ? Omit<T, K> : never;
export type ControlRequestBody = DistributiveOmit<ControlRequest, 'id'>;

export interface TurnListener {
  onEvent(e: AgentEvent): void;
  onEnd(stop: StopReason, error?: { code: string; message: string }, extras?: TurnEndExtras): void;
}

export type ProxyDecisionMessage = Extract<ControlMessage, { type: 'proxy_decision' }>;

export class SandboxClient {
  private pending = new Map<
    string,
    { resolve: (d: Record<string, unknown>) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }
  >();
  private turns = new Map<string, TurnListener>();
  private closeHandlers: (() => void)[] = [];
  private decisionHandler?: (d: ProxyDecisionMessage) => void;
  closed = false;

  /** Lines the supervisor wrote that failed the protocol (tests and metrics read it). */
  rejected = 0;

  private readonly log: Logger;

  private constructor(
    private readonly sock: Socket,
    log?: Logger,
  ) {
    this.log = log ?? defaultLog();
    sock.on('error', () => sock.destroy());
    sock.on('close', () => this.onClose());
    readMessages(sock, {
      schema: ControlMessageSchema,
      onMessage: (m) => this.onMessage(m),
      onReject: (err) => {
        this.rejected++;
        this.log.warn(protocolLogFields(err, 'sandbox-control'), 'sandbox sent a bad control line');
      },
    });
  }

  /** Connect, retrying while the supervisor is not listening yet (container still starting). */
  static async connect(path: string, timeoutMs = 15_000, log?: Logger): Promise<SandboxClient> {
    const deadline = Date.now() + timeoutMs;
    let lastErr: unknown;
    while (Date.now() < deadline) {
      try {
        const sock = await new Promise<Socket>((resolve, reject) => {
          const s = createConnection(path);
          s.once('connect', () => {
            s.removeListener('error', reject);
            resolve(s);
          });
          s.once('error', reject);
        });
        return new SandboxClient(sock, log);
      } catch (err) {
        lastErr = err;
        // A refused connect to a unix socket costs microseconds; a long pause would only add
        // itself to every cold start (the socket appears ~50 ms after the container starts).
        await new Promise((r) => setTimeout(r, CONNECT_RETRY_MS));
      }
    }
    throw new AppError('ERR_SANDBOX_UNREACHABLE', 'the sandbox control socket did not come up', { cause: lastErr });
  }

  /** The in-container proxy's per-request outcomes (the supervisor relays them). */
  onProxyDecision(fn: (d: ProxyDecisionMessage) => void): void {
    this.decisionHandler = fn;
  }

  onClosed(fn: () => void): void {
    if (this.closed) fn();
    else this.closeHandlers.push(fn);
  }

  private onClose(): void {
    if (this.closed) return;
    this.closed = true;
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(new AppError('ERR_SANDBOX_LOST', 'the sandbox went away'));
    }
    this.pending.clear();
    for (const t of this.turns.values())
      t.onEnd('error', { code: 'ERR_SANDBOX_LOST', message: 'the sandbox stopped during the turn' });
    this.turns.clear();
    for (const fn of this.closeHandlers) fn();
  }

  private onMessage(m: ControlMessage): void {
    if (m.type === 'reply') {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      clearTimeout(p.timer);
      if (m.ok) p.resolve(m.data ?? {});
      else p.reject(appErrorFromPeer(m.error));
    } else if (m.type === 'event') {
      this.turns.get(m.turn_id)?.onEvent(m.event);
    } else if (m.type === 'turn_end') {
      const t = this.turns.get(m.turn_id);
      this.turns.delete(m.turn_id);
      t?.onEnd(m.stop_reason, m.error, {
        ...(m.items ? { items: m.items } : {}),
        ...(m.usage ? { usage: m.usage } : {}),
      });
    } else if (m.type === 'proxy_decision') {
      this.decisionHandler?.(m);
    }
  }

  request(body: ControlRequestBody, timeoutMs = REQUEST_TIMEOUT_MS): Promise<Record<string, unknown>> {
    if (this.closed) return Promise.reject(new AppError('ERR_SANDBOX_LOST', 'the sandbox went away'));
    const id = randomUUID();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new AppError('ERR_SANDBOX_TIMEOUT', `the sandbox did not answer ${body.type}`));
      }, timeoutMs);
      timer.unref();
      this.pending.set(id, { resolve, reject, timer });
      writeMessage<ControlRequest>(this.sock, { ...body, id });
    });
  }

  /**
   * `ping`, its reply checked against SupervisorStatusSchema (ERR_PROTOCOL_BAD_MESSAGE when it
   * does not match, logged like any refused line).
   */
  async ping(timeoutMs = REQUEST_TIMEOUT_MS): Promise<SupervisorStatus> {
    const r = checkMessage(SupervisorStatusSchema, await this.request({ type: 'ping' }, timeoutMs));
    if (r.ok) return r.msg;
    this.rejected++;
    this.log.warn(protocolLogFields(r.err, 'sandbox-control'), 'sandbox sent a bad status');
    throw r.err;
  }

  /** Register the listener before sending the prompt so no event is missed. */
  watchTurn(turnId: string, l: TurnListener): () => void {
    this.turns.set(turnId, l);
    return () => this.turns.delete(turnId);
  }

  close(): void {
    this.sock.destroy();
  }
}
