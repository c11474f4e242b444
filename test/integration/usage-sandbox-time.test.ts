/**
 * Sandbox time in usage (docs/usage.md): a released sandbox's claim-to-release seconds are added
 * to its user's row for its chat model on the release's UTC day, beside the turns' figures, and
 * the report and its CSV show them as sandbox-minutes. Runs on SQLite and PostgreSQL.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createUser } from '../../domain/users.js';
import { recordSandboxTime, recordTurnUsage, usageCsv, usageReport } from '../../domain/usage/index.js';
import { openTestDatabase, TEST_ENGINE } from '../helpers/db.js';

t.test(`sandbox-minutes per user and model per day (${TEST_ENGINE})`, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'usage-sbx-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const db = (await openTestDatabase(t, dir)).sql;
  const ann = await createUser(db, { username: 'ann' });
  const ben = await createUser(db, { username: 'ben' });
  const day = new Date('2026-11-28T10:00:00Z');
  // Ann: a turn, then her sandbox held 150 s and another 90.4 s the same day; ben 60 s on another model.
  await recordTurnUsage(db, {
    userId: ann.id,
    modelId: 'default',
    usage: { input_tokens: 10, output_tokens: 5 },
    toolCalls: 1,
    mails: 0,
    at: day,
  });
  await recordSandboxTime(db, { userId: ann.id, modelId: 'default', seconds: 150, at: day });
  await recordSandboxTime(db, { userId: ann.id, modelId: 'default', seconds: 90.4, at: day });
  await recordSandboxTime(db, { userId: ben.id, modelId: 'other', seconds: 60, at: day });
  await recordSandboxTime(db, { userId: ben.id, modelId: 'other', seconds: 30, at: new Date('2026-11-29T00:00:01Z') });
  const q = { from: '2026-11-28', to: '2026-11-29', period: 'day' as const };
  const byUser = await usageReport(db, { ...q, group: 'user' });
  t.same(
    byUser.map((r) => [r.period, r.name, r.turns, r.input_tokens, r.sandbox_minutes]),
    [
      ['2026-11-28', 'ann', 1, 10, 4], // 240 s
      ['2026-11-28', 'ben', 0, 0, 1],
      ['2026-11-29', 'ben', 0, 0, 0.5],
    ],
    'per user per day, beside the turn figures (whole seconds, minutes to one decimal)',
  );
  const byModel = await usageReport(db, { ...q, period: 'month', group: 'model' });
  t.same(
    byModel.map((r) => [r.period, r.key, r.sandbox_minutes]),
    [
      ['2026-11', 'default', 4],
      ['2026-11', 'other', 1.5],
    ],
    'per model per month',
  );
  const csv = usageCsv(byUser, null).split('\r\n');
  t.match(csv[0], /,mails,sandbox_minutes,cost,currency$/, 'the CSV has the column');
  t.match(csv[1], /,ann,1,10,5,1,0,4,0,$/, "ann's line");
  await t.rejects(
    recordSandboxTime(db, { userId: 999_999, modelId: 'default', seconds: 1, at: day }),
    'an unknown user is refused (foreign key), no row',
  );
});
