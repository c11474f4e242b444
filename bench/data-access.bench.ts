import {
  assign,
  compilePolicy,
  compileTablePolicy,
  createRole,
  effectivePolicyOf,
  grantsOf,
  putPolicy,
  policyForTable,
  resolveEffectivePolicy,
  type RowFilter,
} from '../domain/data-access/index.js';
import { nowMs, stats, type BenchResult } from './lib.js';
import { openDatabase } from '../domain/db/index.js';
import { createUser, getUserById } from '../domain/users.js';

const ROLES = 10;
const TABLES = 50;
const N = 400;
const WARMUP = 50;

async function measureUs(fn: () => unknown): Promise<{ p50: number; p99: number; mean: number; n: number }> {
  for (let i = 0; i < WARMUP; i++) await fn();
  const samples: number[] = [];
  for (let i = 0; i < N; i++) {
    const s = nowMs();
    await fn();
    samples.push((nowMs() - s) * 1000);
  }
  return stats(samples);
}

/**
 * Effective-policy resolution for a user with 10 roles × 50 tables (500 grants, each with a
 * two-leaf row filter using $user_id), and compiling it to SQL; baseline: one indexed user read.
 * Embedded SQLite through the Kysely data layer (AIRLOCK_DATABASE_URL: on that PostgreSQL instead).
 * Every sample is awaited, pure steps too, so they carry the same await overhead as the baseline.
 */
export async function run(): Promise<BenchResult> {
  const database = await openDatabase({ url: process.env.AIRLOCK_DATABASE_URL, file: ':memory:' });
  const db = database.sql;
  try {
    const user = await createUser(db, { username: `bench${Date.now()}` });
    const admin = await createUser(db, { username: `admin${Date.now()}`, isSuperuser: true });
    for (let r = 0; r < ROLES; r++) {
      const role = await createRole(db, admin.id, `role${r}_${user.id}`);
      for (let t = 0; t < TABLES; t++) {
        const filter: RowFilter = {
          any: [
            { column: 'owner_id', op: 'eq', value: '$user_id' },
            { column: 'region', op: 'in', value: [`r${r}`, 'shared'] },
          ],
        };
        await putPolicy(db, admin.id, role.id, `table_${t}`, ['id', `c${r}`, `c${(r + 1) % ROLES}`], filter);
      }
      await assign(db, admin.id, user.id, role.id);
    }
    const grants = await grantsOf(db, user.id);
    const who = { id: user.id, username: user.username, is_active: true };
    const eff = resolveEffectivePolicy(who, grants, true);
    if (eff.tables.length !== TABLES) throw new Error(`expected ${TABLES} tables, got ${eff.tables.length}`);

    const base = await measureUs(() => getUserById(db, user.id));
    const read = await measureUs(() => grantsOf(db, user.id));
    const resolve = await measureUs(() => resolveEffectivePolicy(who, grants, true));
    const full = await measureUs(() => effectivePolicyOf(db, user.id));
    const compileAll = await measureUs(() => compilePolicy(eff, 'sqlite'));
    const compileOne = await measureUs(() => compileTablePolicy(policyForTable(eff, 'table_7')!, 'postgres'));

    const row = (what: string, s: Awaited<ReturnType<typeof measureUs>>) => ({
      what,
      n: s.n,
      p50_us: s.p50,
      p99_us: s.p99,
      mean_us: s.mean,
    });
    return {
      name: 'data-access',
      rows: [
        row('baseline: getUserById (1 indexed row)', base),
        row(`read grants (${ROLES} roles x ${TABLES} tables) from ${database.engine}`, read),
        row('resolve effective policy (pure, grants in memory)', resolve),
        row('effectivePolicyOf (DB read + resolve)', full),
        row(`compile all ${TABLES} tables (sqlite)`, compileAll),
        row('compile one table (postgres, 10-way OR)', compileOne),
      ],
      ratios: {
        resolve_p50_vs_baseline: resolve.p50 / base.p50,
        effective_total_p50_vs_baseline: full.p50 / base.p50,
        compile_all_p50_vs_baseline: compileAll.p50 / base.p50,
        compile_one_p50_vs_baseline: compileOne.p50 / base.p50,
      },
      notes: `${database.engine}; ${ROLES * TABLES} grants; each table's filter is an OR of ${ROLES} two-leaf groups after merging`,
    };
  } finally {
    await database.close();
  }
}
