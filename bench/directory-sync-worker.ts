/**
 * One measured phase of the directory-sync bench, in a process of its own so that its peak RSS
 * is that phase's alone: `process.resourceUsage().maxRSS` is the kernel's high-water mark
 * (getrusage ru_maxrss), which also sees the synchronous apply transaction that no timer can
 * sample. Forked by directory-sync.bench.ts with one IPC message:
 *   {phase: 'fetch' | 'sync', dataDir, directoryUrl, tokenUrl, serviceAccount, adminEmail, connectionId}
 * and answers with one message (WorkerResult), then exits.
 */
import { join } from 'node:path';
import { loadConfig, silentLogger } from '../core/index.js';
import { createOrGetRunningJob, type ServiceAccountKey } from '../web/index.js';
import { DirectoryClient, fetchDirectory, runDirectorySync } from '../daemon/directory-sync/index.js';
import { nowMs } from './lib.js';
import { openDatabase } from '../domain/db/index.js';

export interface WorkerTask {
  phase: 'fetch' | 'sync';
  dataDir: string;
  directoryUrl: string;
  tokenUrl: string;
  serviceAccount: ServiceAccountKey;
  adminEmail: string;
  connectionId: number;
}

export interface WorkerResult {
  seconds: number;
  /** RSS and maxRSS (MB) once the modules are loaded, before any work. */
  start_rss_mb: number;
  /** maxRSS (MB) when the apply transaction begins: the fetch phase's peak (sync only). */
  peak_rss_fetch_mb?: number;
  /** maxRSS (MB) at the end: the whole phase's peak. */
  peak_rss_mb: number;
  status?: string;
  result?: { rows_written: number; requests: number; fetch_ms: number; apply_ms: number };
  fetched?: { users: number; groups: number; memberships: number; requests: number };
  error?: string;
}

const maxRssMb = () => process.resourceUsage().maxRSS / 1024; // kilobytes on Linux
const rssMb = () => process.memoryUsage().rss / 2 ** 20;

async function work(task: WorkerTask): Promise<WorkerResult> {
  const start = Math.max(rssMb(), maxRssMb());
  const t0 = nowMs();
  if (task.phase === 'fetch') {
    const client = new DirectoryClient({
      serviceAccount: task.serviceAccount,
      delegatedAdminEmail: task.adminEmail,
      baseUrl: task.directoryUrl,
      tokenUrl: task.tokenUrl,
    });
    const snap = await fetchDirectory(client);
    return {
      seconds: (nowMs() - t0) / 1000,
      start_rss_mb: start,
      peak_rss_mb: maxRssMb(),
      fetched: {
        users: snap.users.length,
        groups: snap.groups.length,
        memberships: snap.memberships,
        requests: client.requests,
      },
    };
  }
  const config = loadConfig({
    AIRLOCK_DATA_DIR: task.dataDir,
    AIRLOCK_GOOGLE_DIRECTORY_BASE_URL: task.directoryUrl,
    AIRLOCK_GOOGLE_TOKEN_URL: task.tokenUrl,
    MCP_INTERNAL_SECRET: 'bench-secret-0123456789',
    AGENT_USER_TOKEN_SECRET: 'bench-secret-0123456789',
  });
  const database = await openDatabase({ file: join(task.dataDir, 'airlock.db') });
  const db = database.sql;
  try {
    const { job } = await createOrGetRunningJob(db, task.connectionId, 'manual', null);
    let peakFetch: number | undefined;
    const done = await runDirectorySync({ config, db, log: silentLogger() }, job.id, (phase) => {
      if (phase === 'apply' && peakFetch === undefined) peakFetch = maxRssMb();
    });
    return {
      seconds: (nowMs() - t0) / 1000,
      start_rss_mb: start,
      peak_rss_fetch_mb: peakFetch,
      peak_rss_mb: maxRssMb(),
      status: done.status,
      result: done.result ? JSON.parse(done.result) : undefined,
      error: done.error ?? undefined,
    };
  } finally {
    await database.close();
  }
}

process.once('message', (task: WorkerTask) => {
  work(task).then(
    (r) => process.send!(r, () => process.exit(0)),
    (err: Error) =>
      process.send!({ error: err.message, seconds: 0, start_rss_mb: 0, peak_rss_mb: 0 } satisfies WorkerResult, () =>
        process.exit(1),
      ),
  );
});
