import { textTable } from '../../core/text-table.js';
/**
 * Operator commands: `airlock image build` and `airlock sessions …`. The sessions commands talk
 * to the running daemon over its control socket (<data dir>/control.sock, mode 0600); attach then
 * goes to the engine, through the sandbox driver, for the container the daemon names. In a fleet,
 * a session another node owns is handled there (daemon/cli/fleet.ts).
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { AppError, createLogger, type Config } from '../../core/index.js';
import { createDocker } from '../runtime/docker.js';
import { DockerDriver } from '../runtime/docker-driver.js';
import type { SandboxDriver } from '../runtime/sandbox-driver.js';
import { buildSandboxImage } from '../runtime/image.js';
import { controlRequest } from '../runtime/control-api.js';
import type { SandboxInfo } from '../runtime/session-manager.js';
import { attachRemote, inFleet, operatorAnywhere, ownerElsewhere, remoteSessions } from './fleet.js';
import { LOGS_TAIL_MAX } from '../runtime/operator.js';

/** The fields of a listed sandbox the CLI reads; others pass through untouched (`--json` prints them all). */
type SandboxRow = Pick<
  SandboxInfo,
  'containerId' | 'sessionId' | 'userId' | 'createdAt' | 'lastUsedAt' | 'turns' | 'stale'
> & { state: string };
const SandboxRowSchema: z.ZodType<SandboxRow> = z.looseObject({
  containerId: z.string(),
  sessionId: z.string().nullable(),
  userId: z.number().nullable(),
  state: z.string(),
  createdAt: z.number(),
  lastUsedAt: z.number(),
  turns: z.number(),
  stale: z.boolean(),
});
const SandboxRefSchema = z.looseObject({ containerId: z.string() });
const LogsResultSchema = z.object({
  chunks: z.array(z.object({ stream: z.enum(['stdout', 'stderr']), data: z.string() })),
});
const RestartStaleSchema = z.object({ restarted: z.array(z.string()) });

/** Repository root (dist/daemon/cli/runtime.js → ../../..). */
export function repoRoot(): string {
  return join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
}

export async function imageBuildCommand(
  config: Readonly<Config>,
  opts: { tag?: string; rebuildBase?: boolean },
): Promise<void> {
  const log = createLogger({ level: config.logLevel, destination: process.stderr });
  const r = await buildSandboxImage({
    docker: createDocker(config),
    tag: opts.tag ?? config.docker.image,
    root: repoRoot(),
    log,
    rebuildBase: opts.rebuildBase,
  });
  process.stdout.write(
    `built ${r.tag} on ${r.baseTag}${r.baseBuilt ? ' (base built)' : ' (base cached)'} in ${((r.baseMs + r.appMs) / 1000).toFixed(1)} s\n`,
  );
}

function age(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  return `${Math.round(s / 3600)}h`;
}

export async function sessionsLs(config: Readonly<Config>, opts: { json?: boolean }): Promise<void> {
  const list = await controlRequest(config.dataDir, { cmd: 'ls' }, undefined, z.array(SandboxRowSchema));
  // In a fleet: every session with the node that owns it (other nodes' details stay there).
  const fleet = inFleet(config);
  const remote = fleet ? await remoteSessions(config) : [];
  if (opts.json) {
    const all = fleet
      ? [
          ...list.map((s) => ({ ...s, node: config.node.id })),
          ...remote.map((r) => ({
            sessionId: r.session_id,
            userId: r.user_id,
            node: r.node_id,
            state: r.alive ? r.state : 'lost',
            containerId: r.container_id,
          })),
        ]
      : list;
    process.stdout.write(JSON.stringify(all, null, 2) + '\n');
    return;
  }
  const rows = [[...(fleet ? ['NODE'] : []), 'SESSION', 'USER', 'CONTAINER', 'STATE', 'AGE', 'IDLE', 'TURNS', 'STALE']];
  const now = Date.now();
  for (const s of list) {
    rows.push([
      ...(fleet ? [config.node.id] : []),
      s.sessionId ?? '(pool)',
      s.userId == null ? '-' : String(s.userId),
      s.containerId.slice(0, 12),
      s.state,
      age(now - s.createdAt),
      age(now - s.lastUsedAt),
      String(s.turns),
      s.stale ? 'yes' : 'no',
    ]);
  }
  for (const r of remote) {
    rows.push([
      r.node_id,
      r.session_id,
      String(r.user_id),
      (r.container_id ?? '-').slice(0, 12),
      r.alive ? r.state : 'lost',
      age(now - Date.parse(r.created_at)),
      '-',
      '-',
      '-',
    ]);
  }
  process.stdout.write(textTable(rows));
}

export async function sessionsInspect(config: Readonly<Config>, id: string): Promise<void> {
  const { result, node } = await operatorAnywhere(
    config,
    () => controlRequest(config.dataDir, { cmd: 'inspect', id }),
    { cmd: 'inspect', id },
  );
  process.stdout.write(JSON.stringify(inFleet(config) ? Object.assign({ node }, result) : result, null, 2) + '\n');
}

/** The engine, for the two commands that need more than the daemon's control socket. */
function driverFor(config: Readonly<Config>): SandboxDriver {
  return new DockerDriver(createDocker(config), config.sandbox);
}

export async function sessionsLogs(config: Readonly<Config>, id: string, opts: { tail: string }): Promise<void> {
  const tail = opts.tail === undefined ? 200 : Number(opts.tail);
  if (!Number.isSafeInteger(tail) || tail < 1 || tail > LOGS_TAIL_MAX)
    throw new AppError('ERR_CLI_USAGE', `--tail: a whole number from 1 to ${LOGS_TAIL_MAX}`);
  const request = { cmd: 'logs' as const, id, tail };
  const { result } = await operatorAnywhere(config, () => controlRequest(config.dataDir, request), request);
  for (const c of LogsResultSchema.parse(result).chunks)
    (c.stream === 'stderr' ? process.stderr : process.stdout).write(Buffer.from(c.data, 'base64'));
}

export async function sessionsAttach(config: Readonly<Config>, id: string, opts: { root?: boolean }): Promise<void> {
  const o = { root: !!opts.root, term: process.env.TERM ?? 'xterm' };
  const tty = { stdin: process.stdin, stdout: process.stdout };
  // Here, or on the node that owns the session (a signed upgrade: daemon/cli/fleet.ts).
  const where = await controlRequest(config.dataDir, { cmd: 'inspect', id }, undefined, SandboxRefSchema).then(
    (info) => ({ containerId: info.containerId }),
    async (err: unknown) => ({ node: await ownerElsewhere(config, err, id) }),
  );
  const code =
    'node' in where
      ? await attachRemote(config, where.node, id, o, tty)
      : await driverFor(config).shell(where.containerId, o, tty);
  // Exit as the remote shell did (`exit 3` in the sandbox → the CLI exits 3), as ssh does.
  process.exit(code);
}

export async function sessionsRestart(
  config: Readonly<Config>,
  id: string | undefined,
  opts: { stale?: boolean },
): Promise<void> {
  if (opts.stale) {
    const r = await controlRequest(config.dataDir, { cmd: 'restart-stale' }, undefined, RestartStaleSchema);
    process.stdout.write(
      `restarted ${r.restarted.length} stale session(s)${r.restarted.length ? ': ' + r.restarted.join(', ') : ''}\n`,
    );
    return;
  }
  if (!id) throw new AppError('ERR_CLI_USAGE', 'give a session id or --stale');
  const { node } = await operatorAnywhere(config, () => controlRequest(config.dataDir, { cmd: 'restart', id }), {
    cmd: 'restart',
    id,
  });
  process.stdout.write(`restarted ${id}${node !== config.node.id ? ` on node ${node}` : ''}\n`);
}

export async function sessionsKill(config: Readonly<Config>, id: string): Promise<void> {
  const { node } = await operatorAnywhere(config, () => controlRequest(config.dataDir, { cmd: 'kill', id }), {
    cmd: 'kill',
    id,
  });
  process.stdout.write(`killed ${id}${node !== config.node.id ? ` on node ${node}` : ''}\n`);
}
