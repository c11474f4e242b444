import { join } from 'node:path';
import { AppError, isAppError, type Config } from '../core/index.js';
import { openDatabase } from '../domain/db/index.js';
import { listNodes, sandboxOf, type NodeInfo, type SandboxRow } from '../domain/fleet.js';
import { nodeRequest } from './fleet.js';

/**
 * `airlock sessions …` in a fleet: the local daemon answers for its own sessions; a session
 * another node owns is named with its owner, and inspect, restart and kill are sent to the
 * owner (signed like every request between nodes). A single host never gets here.
 */
export function inFleet(config: Readonly<Config>): boolean {
  return !!config.databaseUrl && !!config.node.secret;
}

async function withDb<T>(config: Readonly<Config>, fn: (db: Awaited<ReturnType<typeof openDatabase>>) => Promise<T>): Promise<T> {
  const database = await openDatabase({ url: config.databaseUrl?.reveal(), file: join(config.dataDir, 'airlock.db') });
  try {
    return await fn(database);
  } finally {
    await database.close();
  }
}

/** The owner of a session when it is another node: its row and node. */
export async function remoteOwner(config: Readonly<Config>, sessionId: string): Promise<{ row: SandboxRow; node: NodeInfo | undefined } | undefined> {
  if (!inFleet(config)) return undefined;
  return withDb(config, async (db) => {
    const row = await sandboxOf(db.sql, sessionId);
    if (!row || row.node_id === config.node.id) return undefined;
    const node = (await listNodes(db.sql, config.node.lostS)).find((n) => n.id === row.node_id);
    return { row, node };
  });
}

/**
 * Run an operator command here; when this node does not know the session and another node owns
 * it, run it there. Returns the result and the node that answered.
 */
export async function operatorAnywhere(config: Readonly<Config>, local: () => Promise<unknown>, request: { cmd: 'inspect' | 'kill' | 'restart'; id: string }): Promise<{ result: unknown; node: string }> {
  try {
    return { result: await local(), node: config.node.id };
  } catch (err) {
    if (!isAppError(err, 'ERR_SESSION_NOT_FOUND') && !isAppError(err, 'ERR_DAEMON_NOT_RUNNING')) throw err;
    const owner = await remoteOwner(config, request.id);
    if (!owner) throw err;
    if (!owner.node?.alive) throw new AppError('ERR_NODE_UNREACHABLE', `session ${request.id} was on node ${owner.row.node_id}, which is lost; its next prompt starts it on a live node`, { status: 503 });
    return { result: await nodeRequest(config, owner.node.url, 'POST', '/api/fleet/operator', request), node: owner.node.id };
  }
}

/** For logs and attach (they need the owner's container engine): name the owner. */
export async function refuseRemote(config: Readonly<Config>, err: unknown, sessionId: string): Promise<never> {
  if (isAppError(err, 'ERR_SESSION_NOT_FOUND') || isAppError(err, 'ERR_DAEMON_NOT_RUNNING')) {
    const owner = await remoteOwner(config, sessionId);
    if (owner) throw new AppError('ERR_SESSION_NOT_FOUND', `session ${sessionId} runs on node ${owner.row.node_id} (${owner.node?.url ?? 'unknown URL'}): run this command there`, { status: 404 });
  }
  throw err;
}

/** Sessions other nodes own, for `sessions ls` (their details stay on their nodes). */
export async function remoteSessions(config: Readonly<Config>): Promise<(SandboxRow & { alive: boolean })[]> {
  if (!inFleet(config)) return [];
  return withDb(config, async (db) => {
    const nodes = await listNodes(db.sql, config.node.lostS);
    const rows = await db.sql.selectFrom('sandboxes').selectAll().where('node_id', '!=', config.node.id).orderBy('created_at').execute();
    return rows.map((r) => ({ ...r, alive: !!nodes.find((n) => n.id === r.node_id)?.alive }));
  });
}
