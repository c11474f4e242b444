/**
 * Moving an install from embedded SQLite to PostgreSQL: `airlock db copy --to postgres://…`
 * copies every row with its id, the identity sequences continue after the highest id SQLite
 * ever handed out, and a target that already has users is refused without a change.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { openDatabase, type Database } from '../../domain/db/index.js';
import { tempDir, TEST_SECRETS } from '../helpers/app.js';
import { postgresForTest } from '../helpers/db.js';

const run = promisify(execFile);
const MAIN = join(process.cwd(), 'dist', 'daemon', 'main.js');

async function everything(db: Database): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  const s = db.sql as any;
  for (const table of [
    'users',
    'chat_sessions',
    'chat_turns',
    'chat_tool_calls',
    'memories',
    'data_roles',
    'data_policies',
    'user_data_roles',
    'action_log',
    'organisations',
    'teams',
    'team_members',
  ]) {
    const rows = (await s.selectFrom(table).selectAll().execute()) as Record<string, unknown>[];
    out[table] = rows
      .map((r) =>
        JSON.stringify(
          Object.keys(r)
            .sort()
            .map((k) => [k, r[k]]),
        ),
      )
      .sort();
  }
  return out;
}

t.test('airlock db copy --to postgres://… moves every row; ids continue, never reused', async (t) => {
  const url = await postgresForTest(t);
  if (!url) return;
  const dir = tempDir(t);
  const src = await openDatabase({ file: join(dir, 'airlock.db') });
  const db = src.sql;
  const u1 = await db
    .insertInto('users')
    .values({
      username: 'ann',
      email: 'ann@x.test',
      display_name: 'Ann',
      password_hash: 'h',
      last_login_at: null,
      is_superuser: 1,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const gone = await db
    .insertInto('users')
    .values({ username: 'gone', email: null, display_name: null, password_hash: null, last_login_at: null })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db.deleteFrom('users').where('id', '=', gone.id).execute();
  await db.insertInto('chat_sessions').values({ id: 's1', user_id: u1.id, title: "ünïcode 😀 'quotes'" }).execute();
  await db
    .insertInto('chat_turns')
    .values({
      id: 't1',
      session_id: 's1',
      prompt: 'hello',
      text: 'hi\nthere',
      status: 'done',
      stop_reason: 'end_turn',
      error_code: null,
      error_message: null,
      ended_at: '2026-01-01T00:00:00.000Z',
    })
    .execute();
  await db
    .insertInto('chat_tool_calls')
    .values({
      turn_id: 't1',
      call_id: 'c1',
      tool: 'send_email',
      input: '{"to":"x"}',
      status: 'ok',
      output: 'sent',
      error: null,
      duration_ms: 12,
    })
    .execute();
  for (const c of ['one', 'two', 'three'])
    await db.insertInto('memories').values({ user_id: u1.id, content: c }).execute();
  const lastMemory = await db.selectFrom('memories').select('id').orderBy('id', 'desc').executeTakeFirstOrThrow();
  await db.deleteFrom('memories').where('id', '=', lastMemory.id).execute();
  const org = await db.insertInto('organisations').values({ name: 'Acme' }).returning('id').executeTakeFirstOrThrow();
  const team = await db
    .insertInto('teams')
    .values({ organisation_id: org.id, name: 'Ops', external_group_id: null })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db.insertInto('team_members').values({ team_id: team.id, user_id: u1.id }).execute();
  const role = await db
    .insertInto('data_roles')
    .values({ name: 'analyst', description: 'reads sales' })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db
    .insertInto('data_policies')
    .values({
      role_id: role.id,
      table_name: 'sales',
      allowed_columns: '["region"]',
      row_filter: '{"column":"region","op":"eq","value":"EU"}',
    })
    .execute();
  await db.insertInto('user_data_roles').values({ user_id: u1.id, role_id: role.id, assigned_by: null }).execute();
  await db
    .insertInto('action_log')
    .values({
      event: 'data.role.created',
      actor_id: u1.id,
      subject_id: null,
      data: JSON.stringify({ role_id: role.id }),
    })
    .execute();
  const before = await everything(src);
  await src.close();

  const env = { ...process.env, ...TEST_SECRETS, AIRLOCK_DATA_DIR: dir };
  const r = await run(process.execPath, [MAIN, 'db', 'copy', '--to', url], { env });
  t.match(r.stdout, /^copied \d+ rows in \d+ tables from sqlite:.* to postgres:\/\//m, 'says what it copied');
  t.notMatch(r.stdout + r.stderr, /:[^@/:]+@127/, 'never the URL with a password');

  const dst = await openDatabase({ url });
  t.teardown(() => dst.close());
  t.same(await everything(dst), before, 'every row of every table, with its id, in PostgreSQL');
  const next = await dst.sql
    .insertInto('memories')
    .values({ user_id: u1.id, content: 'four' })
    .returning('id')
    .executeTakeFirstOrThrow();
  t.ok(
    next.id > lastMemory.id,
    `a new memory gets an id (${next.id}) above every id SQLite handed out (${lastMemory.id})`,
  );
  const nextUser = await dst.sql
    .insertInto('users')
    .values({ username: 'new', email: null, display_name: null, password_hash: null, last_login_at: null })
    .returning('id')
    .executeTakeFirstOrThrow();
  t.ok(nextUser.id > gone.id, "a deleted user's id is not reused either");

  const again = await run(process.execPath, [MAIN, 'db', 'copy', '--to', url], { env }).catch(
    (e: { code: number; stderr: string }) => e,
  );
  t.equal((again as { code?: number }).code, 1, 'a target with users is refused');
  t.match((again as { stderr: string }).stderr, /already has users/);
  const users = await dst.sql.selectFrom('users').select('username').orderBy('id').execute();
  t.same(
    users.map((u) => u.username),
    ['ann', 'new'],
    'and left as it was',
  );
});
