import { join } from 'node:path';
import { z } from 'zod';
import {
  AppError,
  appErrorFromPeer,
  ATTACH_UPGRADE,
  AttachFrameReader,
  CodedErrorSchema,
  encodeAttachFrame,
  isAppError,
  NodeClient,
  type AttachFrame,
  type Config,
  type ShellTerminal,
} from '../../core/index.js';
import { openDatabase } from '../../domain/db/index.js';
import { listNodes, sandboxesOfOtherNodes, sandboxOf, type NodeInfo, type SandboxRow } from '../../domain/fleet.js';
import { nodeRequest } from '../host/fleet.js';

/**
 * `airlock sessions …` in a fleet: the local daemon answers for its own sessions; a session
 * another node owns is shown with its owner, and inspect, logs, restart and kill are sent to the
 * owner (signed like every request between nodes), attach over a signed upgrade. A single host
 * never gets here.
 */
export function inFleet(config: Readonly<Config>): boolean {
  return !!config.databaseUrl && !!config.node.secret;
}

async function withDb<T>(
  config: Readonly<Config>,
  fn: (db: Awaited<ReturnType<typeof openDatabase>>) => Promise<T>,
): Promise<T> {
  const database = await openDatabase({ url: config.databaseUrl?.reveal(), file: join(config.dataDir, 'airlock.db') });
  try {
    return await fn(database);
  } finally {
    await database.close();
  }
}

/** The owner of a session when it is another node: its row and node. */
export async function remoteOwner(
  config: Readonly<Config>,
  sessionId: string,
): Promise<{ row: SandboxRow; node: NodeInfo | undefined } | undefined> {
  if (!inFleet(config)) return undefined;
  return withDb(config, async (db) => {
    const row = await sandboxOf(db.sql, sessionId);
    if (!row || row.node_id === config.node.id) return undefined;
    const node = (await listNodes(db.sql, config.node.lostS)).find((n) => n.id === row.node_id);
    return { row, node };
  });
}

/**
 * The live node that owns `sessionId`, when the local daemon answered `err` for it (it does not
 * know the session, or no daemon runs here) and the fleet records another owner; otherwise `err`
 * is thrown again. An owner that is lost is ERR_NODE_UNREACHABLE.
 */
export async function ownerElsewhere(config: Readonly<Config>, err: unknown, sessionId: string): Promise<NodeInfo> {
  if (!isAppError(err, 'ERR_SESSION_NOT_FOUND') && !isAppError(err, 'ERR_DAEMON_NOT_RUNNING')) throw err;
  const owner = await remoteOwner(config, sessionId);
  if (!owner) throw err;
  if (!owner.node?.alive)
    throw new AppError(
      'ERR_NODE_UNREACHABLE',
      `session ${sessionId} was on node ${owner.row.node_id}, which is lost; its next prompt starts it on a live node`,
    );
  return owner.node;
}

/**
 * Run an operator command here; when this node does not know the session and another node owns
 * it, run it there. Returns the result and the node that answered.
 */
export async function operatorAnywhere(
  config: Readonly<Config>,
  local: () => Promise<unknown>,
  request: { cmd: 'inspect' | 'kill' | 'restart' | 'logs'; id: string; tail?: number },
): Promise<{ result: unknown; node: string }> {
  try {
    return { result: await local(), node: config.node.id };
  } catch (err) {
    const node = await ownerElsewhere(config, err, request.id);
    return { result: await nodeRequest(config, node, 'POST', '/api/fleet/operator', request), node: node.id };
  }
}

/** The HTTP error body of docs/api.md, as an owner sends it. */
const ErrorBodySchema = z.object({ error: CodedErrorSchema });

/** The error body of an owner that refused an attach, as an error here. */
function refusal(body: Buffer, fallback: AppError): AppError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString());
  } catch {
    return fallback; // not JSON: the fallback says what answered
  }
  const r = ErrorBodySchema.safeParse(parsed);
  return r.success ? appErrorFromPeer(r.data.error) : fallback;
}

/**
 * `sessions attach` for a session `node` owns: a signed upgrade to the owner, then attach frames
 * (core/attach-frames.ts) between this terminal and the shell there. Resolves with the shell's
 * exit status.
 */
export function attachRemote(
  config: Readonly<Config>,
  node: NodeInfo,
  sessionId: string,
  o: { root: boolean; term: string },
  tty: ShellTerminal,
): Promise<number> {
  const client = new NodeClient(config);
  const query = new URLSearchParams({
    root: o.root ? '1' : '0',
    term: o.term,
    rows: String(tty.stdout.rows ?? 0),
    cols: String(tty.stdout.columns ?? 0),
  });
  const path = `/api/fleet/sessions/${encodeURIComponent(sessionId)}/attach?${query}`;
  const unreachable = (why: string) => new AppError('ERR_NODE_UNREACHABLE', `node ${node.id} at ${node.url}: ${why}`);
  return new Promise<number>((resolve, reject) => {
    const req = client.open(node, {
      method: 'GET',
      path,
      userId: null,
      keepAlive: false,
      headers: { connection: 'Upgrade', upgrade: ATTACH_UPGRADE },
    });
    req.on('error', (err) => reject(unreachable(`does not answer (${err.message})`)));
    // Refused before any shell started: the owner's error body.
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => reject(refusal(Buffer.concat(parts), unreachable(`answered ${res.statusCode}`))));
    });
    req.on('upgrade', (_res, socket, head) => {
      const reader = new AttachFrameReader();
      let exit: number | undefined;
      const send = (f: AttachFrame) => socket.writable && socket.write(encodeAttachFrame(f));
      const keys = (d: Buffer | string) => send({ type: 'data', data: Buffer.from(d) });
      const eof = () => send({ type: 'eof' });
      const resize = () => send({ type: 'resize', rows: tty.stdout.rows ?? 0, cols: tty.stdout.columns ?? 0 });
      const screen = (chunk: Buffer) => {
        try {
          for (const f of reader.push(chunk)) {
            if (f.type === 'data') tty.stdout.write(f.data);
            else if (f.type === 'exit') exit = f.code;
          }
        } catch {
          socket.destroy();
        }
      };
      if (tty.stdin.isTTY) tty.stdin.setRawMode?.(true);
      tty.stdin.on('data', keys);
      tty.stdin.on('end', eof);
      tty.stdout.on('resize', resize);
      socket.on('data', screen);
      socket.on('error', () => socket.destroy());
      socket.on('close', () => {
        if (tty.stdin.isTTY) tty.stdin.setRawMode?.(false);
        tty.stdin.removeListener('data', keys);
        tty.stdin.removeListener('end', eof);
        tty.stdin.pause();
        if (exit === undefined)
          process.stderr.write(`attach: the connection to node ${node.id} closed before the shell ended\n`);
        resolve(exit ?? 1);
      });
      if (head.length) screen(head);
    });
  });
}

/** Sessions other nodes own, for `sessions ls` (their details stay on their nodes). */
export async function remoteSessions(config: Readonly<Config>): Promise<(SandboxRow & { alive: boolean })[]> {
  if (!inFleet(config)) return [];
  return withDb(config, async (db) => {
    const nodes = await listNodes(db.sql, config.node.lostS);
    const rows = await sandboxesOfOtherNodes(db.sql, config.node.id);
    return rows.map((r) => ({ ...r, alive: !!nodes.find((n) => n.id === r.node_id)?.alive }));
  });
}
