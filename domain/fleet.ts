import { nowIso, type Row, type Sql } from './db/index.js';

/**
 * The fleet's shared state (docs/deploy.md): which nodes exist and when each last said it was
 * alive, which node owns the sandbox of each chat session, and named leases for work that must
 * be done by one node at a time. Everything here is engine-neutral; a single host on SQLite is a
 * fleet of one.
 */

export interface NodeInfo {
  id: string;
  url: string;
  version: string;
  capacity: number;
  sessions: number;
  started_at: string;
  heartbeat_at: string;
  /** Heartbeat younger than the lost limit. */
  alive: boolean;
}

/** Join the fleet (or rejoin after a restart): one row per node id. */
export async function registerNode(
  db: Sql,
  n: { id: string; url: string; version: string; capacity: number },
  now = new Date(),
): Promise<void> {
  const at = nowIso(now);
  await db
    .insertInto('nodes')
    .values({
      id: n.id,
      url: n.url,
      version: n.version,
      capacity: n.capacity,
      sessions: 0,
      started_at: at,
      heartbeat_at: at,
    })
    .onConflict((oc) =>
      oc.column('id').doUpdateSet({
        url: n.url,
        version: n.version,
        capacity: n.capacity,
        sessions: 0,
        started_at: at,
        heartbeat_at: at,
      }),
    )
    .execute();
}

/** I am alive, with this many live sessions. */
export async function heartbeat(db: Sql, id: string, sessions: number, now = new Date()): Promise<void> {
  await db
    .updateTable('nodes')
    .set({ heartbeat_at: nowIso(now), sessions })
    .where('id', '=', id)
    .execute();
}

/** Leave the fleet on a clean shutdown (a crashed node is found by its silence instead). */
export async function leaveFleet(db: Sql, id: string): Promise<void> {
  await db
    .updateTable('nodes')
    .set({ heartbeat_at: nowIso(new Date(0)), sessions: 0 })
    .where('id', '=', id)
    .execute();
}

export async function listNodes(db: Sql, lostS: number, now = new Date()): Promise<NodeInfo[]> {
  const rows = await db.selectFrom('nodes').selectAll().orderBy('id').execute();
  return rows.map((r) => toNode(r, lostS, now));
}

function toNode(r: Row<'nodes'>, lostS: number, now: Date): NodeInfo {
  return { ...r, alive: now.getTime() - Date.parse(r.heartbeat_at) < lostS * 1000 };
}

/**
 * Where a new sandbox goes: the receiving node when it has room, else the live node with the
 * most free places (ties: lowest id); undefined when every live node is full.
 */
export function placeSandbox(nodes: NodeInfo[], receiving: string): NodeInfo | undefined {
  const live = nodes.filter((n) => n.alive && n.sessions < n.capacity);
  const self = live.find((n) => n.id === receiving);
  if (self) return self;
  return live.sort((a, b) => b.capacity - b.sessions - (a.capacity - a.sessions) || a.id.localeCompare(b.id))[0];
}

// --- sandboxes: which node owns a session's sandbox ------------------------------------------

export type SandboxRow = Row<'sandboxes'>;

export async function sandboxOf(db: Sql, sessionId: string): Promise<SandboxRow | undefined> {
  return db.selectFrom('sandboxes').selectAll().where('session_id', '=', sessionId).executeTakeFirst();
}

/** This node now runs (or starts) the sandbox of the session; replaces a lost owner's row. */
export async function ownSandbox(
  db: Sql,
  s: { sessionId: string; userId: number; nodeId: string; containerId?: string | null; state: 'starting' | 'live' },
): Promise<void> {
  const at = nowIso();
  await db
    .insertInto('sandboxes')
    .values({
      session_id: s.sessionId,
      user_id: s.userId,
      node_id: s.nodeId,
      container_id: s.containerId ?? null,
      state: s.state,
      created_at: at,
      updated_at: at,
    })
    .onConflict((oc) =>
      oc.column('session_id').doUpdateSet({
        user_id: s.userId,
        node_id: s.nodeId,
        container_id: s.containerId ?? null,
        state: s.state,
        updated_at: at,
      }),
    )
    .execute();
}

/** The sandbox ended on its owner (reaped, killed, restarted): nothing owns the session now. */
export async function releaseSandbox(db: Sql, sessionId: string, nodeId: string): Promise<void> {
  await db.deleteFrom('sandboxes').where('session_id', '=', sessionId).where('node_id', '=', nodeId).execute();
}

/**
 * Mark the sandboxes of every node silent for longer than lostS as lost; returns how many.
 * Idempotent, so every node may run it: the next prompt of such a session starts a new sandbox
 * on a live node, with the ERR_SANDBOX_LOST notice.
 */
export async function markLostSandboxes(db: Sql, lostS: number, now = new Date()): Promise<number> {
  const cutoff = nowIso(new Date(now.getTime() - lostS * 1000));
  const r = await db
    .updateTable('sandboxes')
    .set({ state: 'lost', updated_at: nowIso(now) })
    .where('state', '!=', 'lost')
    .where((eb) =>
      eb.or([
        eb('node_id', 'not in', eb.selectFrom('nodes').select('id')),
        eb('node_id', 'in', eb.selectFrom('nodes').select('id').where('heartbeat_at', '<', cutoff)),
      ]),
    )
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}

/** The nodes other than `except` that ran a sandbox of the user, the most recent first (where the user's attachments may be). */
export async function nodesOfUserSandboxes(db: Sql, userId: number, except: string): Promise<string[]> {
  const rows = await db
    .selectFrom('sandboxes')
    .select('node_id')
    .where('user_id', '=', userId)
    .where('node_id', '!=', except)
    .orderBy('updated_at', 'desc')
    .execute();
  return rows.map((r) => r.node_id);
}

/** The sandboxes every node but `nodeId` owns, oldest first (`airlock sessions ls` in a fleet). */
export async function sandboxesOfOtherNodes(db: Sql, nodeId: string): Promise<SandboxRow[]> {
  return db.selectFrom('sandboxes').selectAll().where('node_id', '!=', nodeId).orderBy('created_at').execute();
}

/** Sessions a node owned when it went away (for its orphan cleanup when it comes back). */
export async function sandboxesOfNode(db: Sql, nodeId: string): Promise<SandboxRow[]> {
  return db.selectFrom('sandboxes').selectAll().where('node_id', '=', nodeId).execute();
}

// --- leases ----------------------------------------------------------------------------------

/**
 * Take or renew the named lease for `ttlMs` when it is free, expired or already ours. One
 * statement, so two nodes racing for it cannot both win.
 */
export async function acquireLease(
  db: Sql,
  name: string,
  holder: string,
  ttlMs: number,
  now = Date.now(),
): Promise<boolean> {
  const r = await db
    .insertInto('leases')
    .values({ name, holder, expires_at: now + ttlMs })
    .onConflict((oc) =>
      oc
        .column('name')
        .doUpdateSet({ holder, expires_at: now + ttlMs })
        .where((eb) => eb.or([eb('leases.holder', '=', holder), eb('leases.expires_at', '<=', now)])),
    )
    .executeTakeFirst();
  return Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
}

export async function releaseLease(db: Sql, name: string, holder: string): Promise<void> {
  await db.deleteFrom('leases').where('name', '=', name).where('holder', '=', holder).execute();
}

// --- nonces of signed requests between nodes -------------------------------------------------

/**
 * Record the nonce of a signed request until `expiresAt` (unix ms); false when any node recorded
 * it before (a replay). One INSERT … ON CONFLICT DO NOTHING on the primary key: of two nodes
 * racing with the same nonce exactly one inserts, on either engine.
 */
export async function claimNonce(db: Sql, nonce: string, nodeId: string, expiresAt: number): Promise<boolean> {
  const r = await db
    .insertInto('node_nonces')
    .values({ nonce, node_id: nodeId, expires_at: expiresAt })
    .onConflict((oc) => oc.column('nonce').doNothing())
    .executeTakeFirst();
  return Number(r.numInsertedOrUpdatedRows ?? 0) === 1;
}

/** Forget nonces whose window has ended (a request that old is refused as stale anyway). */
export async function purgeNonces(db: Sql, now = Date.now()): Promise<number> {
  const r = await db.deleteFrom('node_nonces').where('expires_at', '<', now).executeTakeFirst();
  return Number(r.numDeletedRows);
}
