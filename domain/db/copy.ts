import { sql } from 'kysely';
import { AppError } from '../../core/index.js';
import type { Database } from './database.js';

/**
 * Copy every row of one Airlock database into another of the same schema version — the way an
 * install moves from embedded SQLite to PostgreSQL (`airlock db copy --to postgres://…`,
 * docs/deploy.md). The target must hold no users yet (a fresh database the migrations just
 * made); its seeded rows are replaced. Everything is written in one transaction on the target,
 * so a failure leaves it as it was. Ids are kept, and each identity sequence continues after the
 * highest id (and on SQLite after the highest id ever handed out), so no id is reused.
 */
export interface CopyReport {
  tables: { table: string; rows: number }[];
}

// node_nonces: transient (a nonce lives 31 s), and a copy's target is a new install.
const SKIP = new Set(['schema_migrations', 'sqlite_sequence', 'node_nonces']);
const BATCH = 200;

/** Tables of the source in an order where every table comes after the tables it references. */
async function tablesInOrder(src: Database): Promise<string[]> {
  const deps = new Map<string, Set<string>>();
  if (src.engine === 'sqlite') {
    const conn = src.sqlite!;
    const names = (
      conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        .all() as { name: string }[]
    ).map((r) => r.name);
    for (const n of names) {
      if (SKIP.has(n)) continue;
      const fks = conn.prepare(`PRAGMA foreign_key_list(${JSON.stringify(n)})`).all() as { table: string }[];
      deps.set(n, new Set(fks.map((f) => f.table).filter((x) => x !== n)));
    }
  } else {
    const tables = await sql<{
      name: string;
    }>`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`.execute(
      src.sql,
    );
    const fks = await sql<{ child: string; parent: string }>`
      SELECT tc.table_name AS child, ccu.table_name AS parent FROM information_schema.table_constraints tc
      JOIN information_schema.constraint_column_usage ccu ON tc.constraint_name = ccu.constraint_name AND tc.table_schema = ccu.table_schema
      WHERE tc.constraint_type = 'FOREIGN KEY' AND tc.table_schema = current_schema()`.execute(src.sql);
    for (const { name } of tables.rows) if (!SKIP.has(name)) deps.set(name, new Set());
    for (const f of fks.rows) if (f.child !== f.parent) deps.get(f.child)?.add(f.parent);
  }
  const out: string[] = [];
  const seen = new Set<string>();
  const visit = (n: string, path: Set<string>) => {
    if (seen.has(n)) return;
    if (path.has(n)) throw new AppError('ERR_DB_MIGRATION', `foreign keys form a cycle at ${n}`);
    path.add(n);
    for (const d of deps.get(n) ?? []) if (deps.has(d)) visit(d, path);
    path.delete(n);
    seen.add(n);
    out.push(n);
  };
  for (const n of [...deps.keys()].sort()) visit(n, new Set());
  return out;
}

/** The highest id each AUTOINCREMENT table ever handed out (SQLite keeps it in sqlite_sequence). */
function sqliteSequences(src: Database): Map<string, number> {
  if (src.engine !== 'sqlite') return new Map();
  const rows = src.sqlite!.prepare('SELECT name, seq FROM sqlite_sequence').all() as { name: string; seq: number }[];
  return new Map(rows.map((r) => [r.name, r.seq]));
}

export async function copyDatabase(src: Database, dst: Database): Promise<CopyReport> {
  if (src.schemaVersion !== dst.schemaVersion) {
    throw new AppError(
      'ERR_DB_MIGRATION',
      `schema versions differ (source ${src.schemaVersion}, target ${dst.schemaVersion}): run the same airlock version on both`,
    );
  }
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const s = src.sql as any;
  const users = await dst.sql
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  if (Number(users.n) > 0)
    throw new AppError(
      'ERR_VALIDATION',
      `the target ${dst.target} already has users: copy only into a new, empty database`,
    );
  const tables = await tablesInOrder(src);
  const seqs = sqliteSequences(src);
  const report: CopyReport = { tables: [] };
  await dst.sql.transaction().execute(async (trx) => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const t = trx as any;
    // Rows the target's migrations seeded (the built-in data role) make way for the source's.
    for (const table of [...tables].reverse()) await t.deleteFrom(table).execute();
    for (const table of tables) {
      const rows = (await s.selectFrom(table).selectAll().execute()) as Record<string, unknown>[];
      for (let i = 0; i < rows.length; i += BATCH)
        await t
          .insertInto(table)
          .values(rows.slice(i, i + BATCH))
          .execute();
      report.tables.push({ table, rows: rows.length });
      if (dst.engine === 'postgres') {
        // (Checked first: a failing statement would abort the whole transaction.)
        const identity = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM information_schema.columns
          WHERE table_schema = current_schema() AND table_name = ${table} AND column_name = 'id' AND is_identity = 'YES'`.execute(
          trx,
        );
        const max = Math.max(seqs.get(table) ?? 0, ...rows.map((r) => Number(r.id) || 0), 0);
        if (Number(identity.rows[0]?.n) > 0 && max > 0)
          await sql`SELECT setval(pg_get_serial_sequence(${table}, 'id'), ${max}, true)`.execute(trx);
      }
      // Into SQLite, AUTOINCREMENT continues after the highest copied id by itself.
    }
  });
  return report;
}
