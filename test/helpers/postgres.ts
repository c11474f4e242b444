import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/**
 * A throwaway PostgreSQL cluster from the machine's `postgresql` package (Debian puts the
 * binaries under /usr/lib/postgresql/<major>/bin): initdb into a temporary folder, listening on
 * 127.0.0.1 at a free port with trust authentication, removed by stop(). PostgreSQL refuses to
 * run as root, so as root it runs as the `postgres` account the package creates.
 */
export interface PgCluster {
  /** Admin URL (database `postgres`, user `postgres`). */
  url: string;
  port: number;
  dir: string;
  /** Stop the server (fast shutdown), keeping its files: start() brings the same cluster back. */
  pause(): void;
  start(): void;
  /** Stop and remove everything. */
  stop(): void;
}

export function pgBinDir(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  for (const v of readdirSync(root).sort((a, b) => Number(b) - Number(a))) {
    const bin = join(root, v, 'bin');
    if (existsSync(join(bin, 'initdb')) && existsSync(join(bin, 'pg_ctl'))) return bin;
  }
  return null;
}

function pgUid(): number | null {
  if (process.getuid?.() !== 0) return null;
  try {
    return Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  } catch {
    return null;
  }
}

/** Why a cluster cannot start here, or null when it can. */
export function pgUnavailable(): string | null {
  if (!pgBinDir()) return 'no PostgreSQL binaries under /usr/lib/postgresql (apt-get install postgresql)';
  if (process.getuid?.() === 0 && pgUid() === null) return 'running as root without a postgres account';
  return null;
}

export function startPgCluster(port: number): PgCluster {
  const why = pgUnavailable();
  if (why) throw new Error(why);
  const bin = pgBinDir()!;
  const uid = pgUid();
  const dir = mkdtempSync(join(tmpdir(), 'airlock-pg-'));
  chmodSync(dir, 0o755);
  if (uid !== null) chownSync(dir, uid, uid);
  const as = (file: string, args: string[]) =>
    uid !== null
      ? execFileSync(
          'su',
          ['postgres', '-s', '/bin/sh', '-c', [file, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ')],
          { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
        )
      : execFileSync(file, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const data = join(dir, 'data');
  as(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale', 'C']);
  const start = () =>
    as(join(bin, 'pg_ctl'), [
      '-D',
      data,
      '-o',
      `-k ${dir} -c listen_addresses=127.0.0.1 -p ${port} -F -c max_connections=300`,
      '-w',
      '-l',
      join(dir, 'log'),
      'start',
    ]);
  const pause = () => {
    try {
      as(join(bin, 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', 'stop']);
    } catch {
      // already stopped
    }
  };
  start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dir,
    pause,
    start,
    stop() {
      pause();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A new, empty database on the cluster at `adminUrl`; drop() removes it (closing its connections). */
export async function createPgDatabase(adminUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `airlock_t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}
