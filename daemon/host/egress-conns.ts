/**
 * Connection bounds of the egress gateway (docs/security.md, "root in the container"): root in a
 * sandbox can open as many connections to its egress socket as it likes, and every accepted one
 * is an open file of the daemon. Unbounded, a sandbox took the daemon to its open-files limit
 * (the web app, other users' logins and chats failed with it). So each session's socket accepts at
 * most `perSession` connections at once and all sessions together at most `total`; past either,
 * a new connection is closed at accept, before any byte is read. Refusals are logged once per
 * burst (a run of refusals less than BURST_QUIET_MS apart, or every BURST_MAX_MS while it lasts),
 * never once per connection: an attack cannot flood the log either.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Config, Logger, Metrics } from '../../core/index.js';

/** The gateway's connection bounds (AIRLOCK_EGRESS_* settings). */
export interface EgressConnectionCaps {
  /** Connections one session's socket holds at once. */
  perSession: number;
  /** Connections every session's socket holds together. */
  total: number;
  /** A connection must send a complete request head within this; idle ones are closed (408). */
  headersTimeoutMs: number;
}

/** The defaults of the AIRLOCK_EGRESS_* settings (core/config-settings.ts). */
export const DEFAULT_EGRESS_CAPS: EgressConnectionCaps = { perSession: 64, total: 1024, headersTimeoutMs: 10_000 };

/** The caps from the settings (AIRLOCK_EGRESS_MAX_CONNECTIONS[_PER_SESSION], AIRLOCK_EGRESS_HEADERS_TIMEOUT_S). */
export function egressCaps(c: Config['egress']): EgressConnectionCaps {
  return {
    perSession: c.maxConnectionsPerSession,
    total: c.maxConnections,
    headersTimeoutMs: c.headersTimeoutS * 1000,
  };
}

/** A burst ends after this long without a refusal. */
export const BURST_QUIET_MS = 1_000;
/** A burst that goes on is logged at least this often. */
export const BURST_MAX_MS = 60_000;

interface Burst {
  refused: number;
  since: number;
  last: number;
  timer: NodeJS.Timeout;
}

/** Counts connections per session and in all; refuses past the caps; logs refusals per burst. */
export class ConnectionGate {
  readonly caps: EgressConnectionCaps;
  readonly #metrics?: Metrics;
  #total = 0;

  constructor(caps: EgressConnectionCaps, metrics?: Metrics) {
    this.caps = caps;
    this.#metrics = metrics;
  }

  /** Connections open now, all sessions together. */
  get open(): number {
    return this.#total;
  }

  /**
   * Bound one session's server: its connections are counted from accept to close, and a
   * connection past a cap is destroyed before the HTTP parser reads from it.
   */
  guard(server: Server, log: Logger): void {
    let mine = 0;
    let burst: Burst | undefined;
    const flush = () => {
      if (!burst) return;
      const b = burst;
      burst = undefined;
      clearTimeout(b.timer);
      log.warn(
        {
          refused: b.refused,
          ms: b.last - b.since,
          perSession: this.caps.perSession,
          total: this.caps.total,
          open: mine,
          openTotal: this.#total,
        },
        'egress connections refused: connection cap reached',
      );
    };
    const tick = () => {
      if (!burst) return;
      const now = Date.now();
      if (now - burst.last >= BURST_QUIET_MS || now - burst.since >= BURST_MAX_MS) return flush();
      burst.timer = setTimeout(tick, BURST_QUIET_MS - (now - burst.last)).unref();
    };
    server.prependListener('connection', (socket: Socket) => {
      if (mine >= this.caps.perSession || this.#total >= this.caps.total) {
        socket.destroy();
        this.#metrics?.proxyDecisions.inc({ route: 'egress', outcome: 'refused' });
        const now = Date.now();
        if (burst) {
          burst.refused++;
          burst.last = now;
        } else burst = { refused: 1, since: now, last: now, timer: setTimeout(tick, BURST_QUIET_MS).unref() };
        return;
      }
      mine++;
      this.#total++;
      socket.once('close', () => {
        mine--;
        this.#total--;
      });
    });
    server.once('close', flush);
  }
}
