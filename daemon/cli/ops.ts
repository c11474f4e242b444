import { textTable } from '../../core/text-table.js';
import Docker from 'dockerode';
import type { Config } from '../../core/index.js';
import { copyDatabase, openDatabase } from '../../domain/db/index.js';
import { listNodes } from '../../domain/fleet.js';
import { join } from 'node:path';
import { airlockVersion } from '../host/fleet.js';
import { checkRuntime, type EngineRuntimes } from '../runtime/sandbox-runtime.js';

/** `airlock nodes ls`: every node of the fleet from the shared database. */
export async function nodesLs(
  config: Readonly<Config>,
  opts: { json?: boolean },
  out: (s: string) => void = (s) => process.stdout.write(s),
): Promise<void> {
  const database = await openDatabase({ url: config.databaseUrl?.reveal(), file: join(config.dataDir, 'airlock.db') });
  try {
    const nodes = await listNodes(database.sql, config.node.lostS);
    if (opts.json) return out(JSON.stringify(nodes, null, 2) + '\n');
    const rows = [['NODE', 'STATE', 'URL', 'LAST HEARTBEAT', 'SESSIONS', 'CAPACITY', 'VERSION']];
    for (const n of nodes)
      rows.push([
        n.id,
        n.alive ? 'alive' : 'lost',
        n.url,
        n.heartbeat_at,
        String(n.sessions),
        String(n.capacity),
        n.version,
      ]);
    out(textTable(rows));
  } finally {
    await database.close();
  }
}

/**
 * `airlock doctor`: what this node would run with — database engine, where (never a password),
 * schema version, node id and URL, the container engine and sandbox image. Exit 1 when the
 * database or the engine cannot be reached.
 */
export async function doctor(
  config: Readonly<Config>,
  out: (s: string) => void = (s) => process.stdout.write(s),
): Promise<number> {
  const lines: [string, string][] = [
    ['airlock', airlockVersion()],
    ['node', `${config.node.id} (${config.node.url})`],
  ];
  let ok = true;
  try {
    const database = await openDatabase({
      url: config.databaseUrl?.reveal(),
      file: join(config.dataDir, 'airlock.db'),
    });
    lines.push(
      ['database', `${database.engine} ${database.target}`],
      ['schema version', String(database.schemaVersion)],
    );
    await database.close();
  } catch (err) {
    ok = false;
    lines.push(['database', `UNAVAILABLE: ${(err as Error).message}`]);
  }
  try {
    const docker = new Docker({ socketPath: config.docker.socketPath });
    const info = (await docker.info()) as { ServerVersion?: string; Runtimes?: EngineRuntimes };
    lines.push([
      'docker',
      `${info.ServerVersion ?? '?'} at ${config.docker.socketPath} (runtimes: ${Object.keys(info.Runtimes ?? {}).join(', ')})`,
    ]);
    const rt = checkRuntime(info.Runtimes, config.sandbox.runtime);
    lines.push(['sandbox runtime', rt.ok ? rt.summary : `UNAVAILABLE: ${rt.problem}`]);
    if (!rt.ok) ok = false;
    try {
      await docker.getImage(config.docker.image).inspect();
      lines.push(['sandbox image', config.docker.image]);
    } catch {
      lines.push(['sandbox image', `${config.docker.image} missing (airlock image build)`]);
    }
  } catch (err) {
    ok = false;
    lines.push(['docker', `UNAVAILABLE at ${config.docker.socketPath}: ${(err as Error).message}`]);
  }
  const w = Math.max(...lines.map(([k]) => k.length));
  out(lines.map(([k, v]) => `${k.padEnd(w)}  ${v}`).join('\n') + '\n');
  return ok ? 0 : 1;
}

/** `airlock db copy --to URL`: this install's data into a new database (docs/deploy.md). */
export async function dbCopy(
  config: Readonly<Config>,
  to: string,
  out: (s: string) => void = (s) => process.stdout.write(s),
): Promise<number> {
  const src = await openDatabase({ url: config.databaseUrl?.reveal(), file: join(config.dataDir, 'airlock.db') });
  try {
    const dst = await openDatabase(/^postgres(ql)?:\/\//.test(to) ? { url: to } : { file: to });
    try {
      const report = await copyDatabase(src, dst);
      const rows = report.tables.reduce((n, t) => n + t.rows, 0);
      out(
        `copied ${rows} rows in ${report.tables.length} tables from ${src.target} to ${dst.target} (schema version ${dst.schemaVersion})\n`,
      );
      for (const t of report.tables) if (t.rows) out(`  ${t.table}: ${t.rows}\n`);
      return 0;
    } finally {
      await dst.close();
    }
  } finally {
    await src.close();
  }
}
