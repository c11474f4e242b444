import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { loadConfig, openDatabase, silentLogger } from '../core/index.js';
import { createOrGetRunningJob, identityEncryptor, saveConnection } from '../web/index.js';
import { DirectoryClient, fetchDirectory, runDirectorySync } from '../daemon/directory-sync/index.js';
import { start as startDirectory } from '../emulator/directory.js';
import { nowMs, round, type BenchResult } from './lib.js';

const USERS = 20_000;
const GROUPS = 2_000;
const MEMBERSHIPS = 100_000;

const rssMb = () => round(process.memoryUsage().rss / 2 ** 20, 1);
const maxRssMb = () => round(process.resourceUsage().maxRSS / 1024, 1);

/**
 * Directory sync of 20k users, 2k groups, 100k memberships from the emulator (over HTTP on
 * loopback), then the no-change re-sync. Baseline: fetching the same directory without
 * applying it, in the same run.
 */
export async function run(): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-bench-sync-'));
  const emu = await startDirectory();
  emu.seed({ users: USERS, groups: GROUPS, memberships: MEMBERSHIPS, suspended: 0.01 });
  const config = loadConfig({
    AIRLOCK_DATA_DIR: dir,
    AIRLOCK_GOOGLE_DIRECTORY_BASE_URL: emu.url,
    AIRLOCK_GOOGLE_TOKEN_URL: emu.tokenUrl,
    MCP_INTERNAL_SECRET: 'bench-secret-0123456789',
    AGENT_USER_TOKEN_SECRET: 'bench-secret-0123456789',
  });
  const db = await openDatabase(join(dir, 'airlock.db'));
  const conn = saveConnection(db, identityEncryptor(config), {
    provider: 'google', issuer: 'https://accounts.google.com', client_id: 'bench',
    service_account_json: JSON.stringify(emu.serviceAccount), delegated_admin_email: `admin@${emu.domain}`,
  });
  const deps = { config, db, log: silentLogger() };
  try {
    const rssStart = rssMb();
    let t0 = nowMs();
    const client = new DirectoryClient({
      serviceAccount: emu.serviceAccount, delegatedAdminEmail: `admin@${emu.domain}`, baseUrl: emu.url, tokenUrl: emu.tokenUrl,
    });
    const snap = await fetchDirectory(client);
    const fetchS = (nowMs() - t0) / 1000;

    const syncRow = async (what: string) => {
      const { job } = createOrGetRunningJob(db, conn.id, 'manual', null);
      let peak = rssMb();
      const timer = setInterval(() => (peak = Math.max(peak, rssMb())), 50);
      t0 = nowMs();
      const done = await runDirectorySync(deps, job.id);
      const s = (nowMs() - t0) / 1000;
      clearInterval(timer);
      peak = Math.max(peak, rssMb());
      if (done.status !== 'succeeded') throw new Error(`sync failed: ${done.error}`);
      const r = JSON.parse(done.result!) as { rows_written: number; requests: number; fetch_ms: number; apply_ms: number };
      return { what, seconds: round(s, 2), fetch_s: round(r.fetch_ms / 1000, 2), apply_s: round(r.apply_ms / 1000, 2), rows_written: r.rows_written, http_requests: r.requests, peak_rss_mb: peak, s };
    };
    const full = await syncRow('full sync (empty db)');
    const again = await syncRow('no-change re-sync');
    return {
      name: 'directory-sync',
      rows: [
        { what: `baseline: fetch only (${snap.users.length} users, ${snap.groups.length} groups, ${snap.memberships} memberships)`, seconds: round(fetchS, 2), fetch_s: round(fetchS, 2), apply_s: 0, rows_written: 0, http_requests: client.requests, peak_rss_mb: rssStart },
        ...[full, again].map(({ s: _s, ...row }) => row),
      ],
      ratios: { full_sync_vs_fetch_only: full.s / fetchS, resync_vs_full_sync: again.s / full.s },
      notes: `emulator runs in the same process (its ${USERS} users sit in this RSS too); process maxRSS ${maxRssMb()} MB`,
    };
  } finally {
    db.close();
    await emu.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
