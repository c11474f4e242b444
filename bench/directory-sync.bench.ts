import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../core/index.js';
import { identityEncryptor, saveConnection } from '../web/index.js';
import { start as startDirectory } from '../emulator/directory.js';
import { round, type BenchResult } from './lib.js';
import type { WorkerResult, WorkerTask } from './directory-sync-worker.js';
import { openDatabase } from '../domain/db/index.js';

const USERS = 20_000;
const GROUPS = 2_000;
const MEMBERSHIPS = 100_000;
const WORKER = join(dirname(fileURLToPath(import.meta.url)), 'directory-sync-worker.js');

/** Run one phase in a fresh child process; its maxRSS is that phase's peak alone. */
function phase(task: WorkerTask): Promise<WorkerResult> {
  return new Promise((resolve, reject) => {
    const child = fork(WORKER, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let answer: WorkerResult | undefined;
    child.once('message', (m) => (answer = m as WorkerResult));
    child.once('error', reject);
    child.once('exit', (code) => {
      if (!answer) reject(new Error(`bench worker exited ${code} without an answer`));
      else if (answer.error)
        reject(
          new Error(`bench worker: ${typeof answer.error === 'string' ? answer.error : JSON.stringify(answer.error)}`),
        );
      else resolve(answer);
    });
    child.send(task);
  });
}

/**
 * Directory sync of 20k users, 2k groups, 100k memberships from the emulator (over HTTP on
 * loopback), then the no-change re-sync. Baseline: fetching the same directory without
 * applying it, in the same run. Each phase runs in its own child process (the emulator stays in
 * this one), so the peak RSS figures are the sync's own, the synchronous apply included.
 */
export async function run(): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-bench-sync-'));
  const emu = await startDirectory();
  emu.seed({ users: USERS, groups: GROUPS, memberships: MEMBERSHIPS, suspended: 0.01 });
  const config = loadConfig({
    AIRLOCK_DATA_DIR: dir,
    MCP_INTERNAL_SECRET: 'bench-secret-0123456789',
    AGENT_USER_TOKEN_SECRET: 'bench-secret-0123456789',
  });
  const database = await openDatabase({ file: join(dir, 'airlock.db') });
  const conn = await saveConnection(database.sql, identityEncryptor(config), {
    provider: 'google',
    issuer: 'https://accounts.google.com',
    client_id: 'bench',
    service_account_json: JSON.stringify(emu.serviceAccount),
    delegated_admin_email: `admin@${emu.domain}`,
  });
  await database.close();
  const task = (p: WorkerTask['phase']): WorkerTask => ({
    phase: p,
    dataDir: dir,
    directoryUrl: emu.url,
    tokenUrl: emu.tokenUrl,
    serviceAccount: emu.serviceAccount,
    adminEmail: `admin@${emu.domain}`,
    connectionId: conn.id,
  });
  try {
    // Untimed: warms the emulator (JIT, its response paths), which runs in this process.
    await phase(task('fetch'));
    const base = await phase(task('fetch'));
    const syncRow = async (what: string) => {
      const r = await phase(task('sync'));
      if (r.status !== 'succeeded' || !r.result) throw new Error(`sync failed: ${JSON.stringify(r.error)}`);
      return {
        what,
        seconds: round(r.seconds, 2),
        fetch_s: round(r.result.fetch_ms / 1000, 2),
        apply_s: round(r.result.apply_ms / 1000, 2),
        rows_written: r.result.rows_written,
        http_requests: r.result.requests,
        start_rss_mb: round(r.start_rss_mb, 1),
        peak_rss_fetch_mb: round(r.peak_rss_fetch_mb ?? NaN, 1),
        peak_rss_mb: round(r.peak_rss_mb, 1),
      };
    };
    const full = await syncRow('full sync (empty db)');
    const again = await syncRow('no-change re-sync');
    const f = base.fetched!;
    return {
      name: 'directory-sync',
      rows: [
        {
          what: `baseline: fetch only (${f.users} users, ${f.groups} groups, ${f.memberships} memberships)`,
          seconds: round(base.seconds, 2),
          fetch_s: round(base.seconds, 2),
          apply_s: 0,
          rows_written: 0,
          http_requests: f.requests,
          start_rss_mb: round(base.start_rss_mb, 1),
          peak_rss_fetch_mb: round(base.peak_rss_mb, 1),
          peak_rss_mb: round(base.peak_rss_mb, 1),
        },
        full,
        again,
      ],
      ratios: {
        full_sync_vs_fetch_only: full.seconds / base.seconds,
        resync_vs_full_sync: again.seconds / full.seconds,
        full_sync_peak_rss_vs_fetch_only: full.peak_rss_mb / base.peak_rss_mb,
      },
      notes:
        'each row runs in a fresh child process; the emulator runs in the parent and is not counted. ' +
        "peak_rss_mb = the child's maxRSS (getrusage ru_maxrss, the kernel's high-water mark, so the synchronous apply " +
        'transaction is included) = Node + the loaded modules (start_rss_mb) + HTTP/JSON buffers + the fetched snapshot + ' +
        "SQLite's page cache and the apply's maps; peak_rss_fetch_mb = maxRSS when the apply transaction starts (the fetch " +
        "phase's peak). An untimed fetch warms the emulator first.",
    };
  } finally {
    await emu.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
