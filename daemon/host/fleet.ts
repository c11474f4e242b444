import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import {
  NodeClient,
  systemClock,
  type Clock,
  type Config,
  type NodeTarget,
  type Logger,
  type TurnRequest,
  type TurnResult,
  type TurnRunner,
} from '../../core/index.js';
import type { Database, Sql } from '../../domain/db/index.js';
import type { RefreshLease } from './tokens.js';
import {
  acquireLease,
  heartbeat,
  purgeNonces,
  leaveFleet,
  listNodes,
  releaseLease,
  markLostSandboxes,
  ownSandbox,
  registerNode,
  releaseSandbox,
  sandboxOf,
} from '../../domain/fleet.js';

const PackageVersionSchema = z.object({ version: z.string() });

/** This program's version (package.json), as nodes report it in `airlock nodes ls`. */
export function airlockVersion(): string {
  let d = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++, d = dirname(d)) {
    try {
      return PackageVersionSchema.parse(JSON.parse(readFileSync(join(d, 'package.json'), 'utf8'))).version;
    } catch {
      // not here
    }
  }
  return 'unknown';
}

export interface FleetMemberOptions {
  config: Readonly<Config>;
  database: Database;
  log: Logger;
  /** Live sessions on this node now (not pool members). */
  liveSessions: () => number;
  /** The clock heartbeats, lost nodes and nonce expiry are read on (core/clock.ts); the real one by default. */
  clock?: Clock;
}

/**
 * This node's membership of the fleet: it registers at start, writes a heartbeat every
 * AIRLOCK_NODE_HEARTBEAT_S with its session count, and on each beat marks the sandboxes of nodes
 * silent for AIRLOCK_NODE_LOST_S as lost and purges expired nonces of signed requests
 * (idempotent, so every node may do it). A database that
 * does not answer costs a warning per outage, never the node: sandboxes keep running.
 */
export class FleetMember {
  readonly #o: FleetMemberOptions;
  #timer?: NodeJS.Timeout;
  #failing = false;
  #beat?: Promise<void>;

  constructor(o: FleetMemberOptions) {
    this.#o = o;
  }

  get id(): string {
    return this.#o.config.node.id;
  }

  async start(): Promise<void> {
    const { config, database } = this.#o;
    await registerNode(
      database.sql,
      { id: config.node.id, url: config.node.url, version: airlockVersion(), capacity: config.sandbox.maxSessions },
      new Date((this.#o.clock ?? systemClock).now()),
    );
    this.#timer = setInterval(() => void this.beat(), config.node.heartbeatS * 1000);
    this.#timer.unref();
  }

  /** One heartbeat and lost-node sweep (also called by tests instead of waiting). */
  beat(): Promise<void> {
    this.#beat ??= (async () => {
      const { config, database, log } = this.#o;
      const now = (this.#o.clock ?? systemClock).now();
      try {
        await heartbeat(database.sql, config.node.id, this.#o.liveSessions(), new Date(now));
        const lost = await markLostSandboxes(database.sql, config.node.lostS, new Date(now));
        if (lost) log.warn({ sessions: lost }, 'sandboxes of silent nodes marked lost');
        // Nonces of signed requests between nodes whose window ended (idempotent, like the sweep).
        await purgeNonces(database.sql, now);
        if (this.#failing) log.info('database answers again; heartbeats resumed');
        this.#failing = false;
      } catch (err) {
        if (!this.#failing)
          log.warn({ err: err instanceof Error ? err.message : String(err) }, 'heartbeat failed; retrying');
        this.#failing = true;
      } finally {
        this.#beat = undefined;
      }
    })();
    return this.#beat;
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#beat;
    await leaveFleet(this.#o.database.sql, this.#o.config.node.id).catch(() => undefined);
  }
}

/**
 * The session manager as the fleet sees it: the sandbox row records which node owns a session
 * (written when its sandbox goes live, removed when it ends here), and a turn this node runs for
 * a session another node owned (a lost node: web/fleet.ts only keeps what no live node owns)
 * starts a sandbox here that gets the chat's stored conversation, as after a lost sandbox.
 */
export class FleetSessions {
  constructor(private readonly o: { config: Readonly<Config>; database: Database; log: Logger; clock?: Clock }) {}

  /**
   * The chat's turn runner: `runner` (the session manager, once the runtime started; the session
   * hooks below are the runtime's before that), noting a session a lost node owned taken over here.
   */
  runnerOver(runner: TurnRunner): TurnRunner {
    return {
      runTurn: async (req: TurnRequest): Promise<TurnResult> => {
        const row = await sandboxOf(this.o.database.sql, req.sessionId);
        if (row && row.node_id !== this.o.config.node.id && row.user_id === req.userId) {
          // No notice: the sandbox started here gets the stored conversation (docs/chat.md).
          this.o.log.warn({ sessionId: req.sessionId, from: row.node_id }, 'taking over the session of a lost node');
        }
        return runner.runTurn(req);
      },
    };
  }

  /** Session hook: this node owns the session's live sandbox now. */
  live(sessionId: string, userId: number): void {
    ownSandbox(this.o.database.sql, { sessionId, userId, nodeId: this.o.config.node.id, state: 'live' }).catch(
      (err: Error) => this.o.log.warn({ sessionId, err: err.message }, 'could not record the sandbox owner'),
    );
  }

  /** Session hook: the sandbox ended here. */
  ended(sessionId: string): void {
    releaseSandbox(this.o.database.sql, sessionId, this.o.config.node.id).catch((err: Error) =>
      this.o.log.warn({ sessionId, err: err.message }, 'could not clear the sandbox owner'),
    );
  }

  /** Adopt a container at start only when the fleet still says this node owns its session. */
  async mayAdopt(sessionId: string): Promise<boolean> {
    const row = await sandboxOf(this.o.database.sql, sessionId);
    // No row: a single host upgraded from before the fleet keeps its sessions; in a fleet the
    // session was taken over and has ended elsewhere since.
    if (!row)
      return (
        (await listNodes(this.o.database.sql, this.o.config.node.lostS, new Date((this.o.clock ?? systemClock).now())))
          .length <= 1
      );
    return row.node_id === this.o.config.node.id && row.state !== 'lost';
  }
}

/**
 * One signed JSON request from this node to another (CLI commands for sessions another node
 * owns), through the fleet's one node client (core/node-client.ts): the answer is checked there.
 */
export async function nodeRequest(
  config: Readonly<Config>,
  node: NodeTarget,
  method: string,
  path: string,
  body?: unknown,
): Promise<unknown> {
  const client = new NodeClient(config);
  try {
    return await client.json(node, method, path, body);
  } finally {
    client.close();
  }
}

/** How long a node may hold an account's refresh lease (a refresh grant takes well under this). */
const REFRESH_LEASE_MS = 30_000;

/** The token service's fleet-wide single flight: one node refreshes an account at a time. */
export function refreshLease(db: Sql, nodeId: string): RefreshLease {
  return {
    acquire: (userId) => acquireLease(db, `token-refresh:${userId}`, nodeId, REFRESH_LEASE_MS),
    release: (userId) => releaseLease(db, `token-refresh:${userId}`, nodeId),
  };
}
