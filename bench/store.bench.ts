import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as chat from '../domain/chat/store.js';
import { assign, createRole, putPolicy } from '../domain/data-access/store.js';
import { effectivePolicyOf } from '../domain/data-access/service.js';
import { readWebSession, writeWebSession } from '../domain/web-sessions.js';
import { openDatabase, type Database, type Sql } from '../domain/db/index.js';
import { createUser } from '../domain/users.js';
import { freePort } from '../test/helpers/app.js';
import { createPgDatabase, pgUnavailable, startPgCluster } from '../test/helpers/postgres.js';
import { nowMs, stats, type BenchResult } from './lib.js';

/**
 * The stores' hot paths on both engines, one after the other in the same run: reading a login
 * session (every request with a cookie), appending a chat turn as a streaming turn writes it
 * (start, one tool call started and ended, end), resolving a user's effective data policy (three
 * roles, 30 grants), reading a 50-turn chat's history (the page's GET …/messages) and listing a
 * user's 20 chats. PostgreSQL runs on a throwaway local cluster (Debian's postgresql package);
 * ratios are PostgreSQL / SQLite.
 */
const N = 300;
const HISTORY_TURNS = 50;
const SESSIONS = 20;

async function appendTurn(db: Sql, sessionId: string, i: number): Promise<void> {
  const turnId = `turn-${sessionId}-${i}`;
  await chat.startTurn(db, sessionId, turnId, `question ${i}`);
  await chat.toolStarted(db, turnId, 'c1', 'add', { a: i, b: 1 });
  await chat.toolEnded(db, turnId, 'c1', 'add', true, i + 1, undefined, 3);
  await chat.endTurn(db, turnId, `The answer is ${i + 1}.`, 'end_turn');
}

async function time(n: number, fn: (i: number) => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = nowMs();
    await fn(i);
    out.push(nowMs() - t0);
  }
  return out;
}

async function measureEngine(
  database: Database,
): Promise<Record<'session' | 'append' | 'policy' | 'history' | 'list', number[]>> {
  const db = database.sql;
  const user = await createUser(db, { username: 'bench' });
  const sid = 'bench-session-id-0123456789';
  await writeWebSession(db, sid, {
    userId: user.id,
    data: JSON.stringify({ cookie: {}, userId: user.id, csrfToken: 'x'.repeat(43) }),
    expiresAt: Date.now() + 3600_000,
  });
  for (let r = 0; r < 3; r++) {
    const role = await createRole(db, null, `role-${r}`);
    for (let g = 0; g < 10; g++)
      await putPolicy(db, null, role.id, `table_${r}_${g}`, ['id', 'region', 'amount'], {
        column: 'region',
        op: 'eq',
        value: '$username',
      });
    await assign(db, null, user.id, role.id);
  }
  const page = await chat.createSession(db, user.id, 'A long chat');
  for (let i = 0; i < HISTORY_TURNS; i++) await appendTurn(db, page.id, i);
  for (let i = 1; i < SESSIONS; i++) await chat.createSession(db, user.id, `chat ${i}`);
  const target = await chat.createSession(db, user.id, 'appended to');
  await time(20, (i) => appendTurn(db, target.id, 10_000 + i)); // warm up
  return {
    session: await time(N, () => readWebSession(db, sid)),
    policy: await time(N, () => effectivePolicyOf(db, user.id)),
    append: await time(N, (i) => appendTurn(db, target.id, i)),
    history: await time(N, () => chat.messages(db, page.id)),
    list: await time(N, () => chat.listSessions(db, user.id)),
  };
}

export async function run(): Promise<BenchResult | { skipped: string }> {
  const why = pgUnavailable();
  if (why) return { skipped: `no PostgreSQL to compare with: ${why}` };
  const dir = mkdtempSync(join(tmpdir(), 'airlock-bench-chat-store-'));
  const cluster = startPgCluster(await freePort());
  try {
    const lite = await openDatabase({ file: join(dir, 'airlock.db') });
    const s = await measureEngine(lite).finally(() => lite.close());
    const pgdb = await createPgDatabase(cluster.url);
    const pgDatabase = await openDatabase({ url: pgdb.url });
    const p = await measureEngine(pgDatabase).finally(() => pgDatabase.close());
    const rows = [];
    const ratios: Record<string, number> = {};
    for (const [key, what] of [
      ['session', 'read a login session (by cookie id)'],
      ['append', 'append a turn (start, tool start, tool end, end: 4 writes, 3 transactions)'],
      ['policy', 'effective data policy (3 roles, 30 grants)'],
      ['history', `history of a ${HISTORY_TURNS}-turn chat`],
      ['list', `list ${SESSIONS} chats`],
    ] as const) {
      const [a, b] = [stats(s[key]), stats(p[key])];
      rows.push({ what: `sqlite: ${what}`, n: a.n, p50_ms: a.p50, p99_ms: a.p99 });
      rows.push({ what: `postgres: ${what}`, n: b.n, p50_ms: b.p50, p99_ms: b.p99 });
      ratios[`${key}_p50_postgres_vs_sqlite`] = b.p50 / a.p50;
    }
    return {
      name: 'store',
      rows,
      ratios,
      notes:
        'one client, sequential calls; SQLite file in a temp folder (WAL), PostgreSQL a local cluster over TCP on 127.0.0.1',
    };
  } finally {
    cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
