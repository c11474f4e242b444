import { createUser, getUserById } from '../core/index.js';
import {
  compilePolicy,
  compileTablePolicy,
  DataAccessStore,
  effectivePolicyOf,
  policyForTable,
  resolveEffectivePolicy,
  type RowFilter,
} from '../web/data-access/index.js';
import { nowMs, stats, type BenchResult } from './lib.js';
import { openDatabase } from '../domain/db/index.js';

const ROLES = 10;
const TABLES = 50;
const N = 400;
const WARMUP = 50;

function measureUs(fn: () => unknown): { p50: number; p99: number; mean: number; n: number } {
  for (let i = 0; i < WARMUP; i++) fn();
  const samples: number[] = [];
  for (let i = 0; i < N; i++) {
    const s = nowMs();
    fn();
    samples.push((nowMs() - s) * 1000);
  }
  return stats(samples);
}

/**
 * Effective-policy resolution for a user with 10 roles × 50 tables (500 grants, each with a
 * two-leaf row filter using $user_id), and compiling it to SQL; baseline: one indexed user read.
 */
export async function run(): Promise<BenchResult> {
  const db = (await openDatabase({ file: ':memory:' })).sqlite!;
  try {
    const user = createUser(db, { username: 'bench' });
    const admin = createUser(db, { username: 'admin', isSuperuser: true });
    const store = new DataAccessStore(db);
    for (let r = 0; r < ROLES; r++) {
      const role = store.createRole(admin.id, `role${r}`);
      for (let t = 0; t < TABLES; t++) {
        const filter: RowFilter = {
          any: [
            { column: 'owner_id', op: 'eq', value: '$user_id' },
            { column: 'region', op: 'in', value: [`r${r}`, 'shared'] },
          ],
        };
        store.putPolicy(admin.id, role.id, `table_${t}`, ['id', `c${r}`, `c${(r + 1) % ROLES}`], filter);
      }
      store.assign(admin.id, user.id, role.id);
    }
    const grants = store.grantsOf(user.id);
    const who = { id: user.id, username: user.username, is_active: true };
    const eff = resolveEffectivePolicy(who, grants, true);
    if (eff.tables.length !== TABLES) throw new Error(`expected ${TABLES} tables, got ${eff.tables.length}`);

    const base = measureUs(() => getUserById(db, user.id));
    const read = measureUs(() => store.grantsOf(user.id));
    const resolve = measureUs(() => resolveEffectivePolicy(who, grants, true));
    const full = measureUs(() => effectivePolicyOf(store, user.id));
    const compileAll = measureUs(() => compilePolicy(eff, 'sqlite'));
    const compileOne = measureUs(() => compileTablePolicy(policyForTable(eff, 'table_7')!, 'postgres'));

    const row = (what: string, s: ReturnType<typeof measureUs>) => ({ what, n: s.n, p50_us: s.p50, p99_us: s.p99, mean_us: s.mean });
    return {
      name: 'data-access',
      rows: [
        row('baseline: getUserById (1 indexed row)', base),
        row(`read grants (${ROLES} roles x ${TABLES} tables) from SQLite`, read),
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
      notes: `${ROLES * TABLES} grants; each table's filter is an OR of ${ROLES} two-leaf groups after merging`,
    };
  } finally {
    db.close();
  }
}
