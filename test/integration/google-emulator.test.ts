import t from 'tap';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseA1, parseDriveQuery, start } from '../../emulator/google.js';
import { readAttachment, ToolError } from '../../tools/index.js';
import { tempDir } from '../helpers/app.js';

t.test('A1 ranges and Drive queries parse like Google does', async (t) => {
  t.same(parseA1('Sheet1!A1:B2', ['Sheet1']), { tab: 'Sheet1', r0: 0, r1: 1, c0: 0, c1: 1 });
  t.same(parseA1("'My tab'!B:C", ['My tab']), { tab: 'My tab', r0: 0, r1: Number.MAX_SAFE_INTEGER, c0: 1, c1: 2 });
  t.equal(parseA1('A1:AA10', ['S'])?.c1, 26);
  t.equal(parseA1('Nope!A1', ['S']), undefined);
  t.equal(parseA1('A1:B2:C3', ['S']), undefined);
  t.same(parseDriveQuery("mimeType = 'x' and name contains 'O\\'Brien'"), [
    { field: 'mimeType', op: '=', value: 'x' },
    { field: 'name', op: 'contains', value: "O'Brien" },
  ]);
  t.equal(parseDriveQuery("name = 'x' or name = 'y'"), undefined, 'unsupported syntax is a 400, not a silent match');
});

t.test('the emulator checks the bearer token, serves values and records requests', async (t) => {
  const g = await start({
    acceptTokens: ['good'],
    seed: { spreadsheets: [{ id: 's1', name: 'S', sheets: { 'Tab A': [['a', 'b', ''], ['c'], []] } }] },
  });
  t.teardown(() => g.close());
  const get = (path: string, token = 'good') => fetch(g.url + path, { headers: { authorization: `Bearer ${token}` } });
  const noAuth = await get('/v4/spreadsheets/s1/values/A1', 'bad');
  t.equal(noAuth.status, 401);
  t.equal(((await noAuth.json()) as { error: { status: string } }).error.status, 'UNAUTHENTICATED');
  const r = await get(`/v4/spreadsheets/s1/values/${encodeURIComponent("'Tab A'!A1:C3")}`);
  t.same(
    await r.json(),
    { range: "'Tab A'!A1:C3", majorDimension: 'ROWS', values: [['a', 'b'], ['c']] },
    'trailing empties trimmed',
  );
  t.equal((await get('/v4/spreadsheets/s1/values/Zed!A1')).status, 400);
  const send = await fetch(`${g.url}/gmail/v1/users/me/messages/send`, {
    method: 'POST',
    headers: { authorization: 'Bearer good', 'content-type': 'application/json' },
    body: '{}',
  });
  t.equal(send.status, 400);
  t.same(
    g.requests.map((x) => x.status),
    [401, 200, 400, 400],
    'every API call recorded with its status',
  );
  t.equal((await fetch(`${g.url}/mailbox`)).status, 200, 'mailbox page needs no token');
});

t.test('readAttachment refuses a symlinked attachments folder', async (t) => {
  const root = tempDir(t);
  const real = join(root, 'real');
  mkdirSync(real);
  const name = '0b9e0a3e-4c1f-4b7e-9a51-0f3b5a8d2c11.png';
  writeFileSync(join(real, name), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0]));
  symlinkSync(real, join(root, 'link'));
  t.equal((await readAttachment(real, name)).length, 9);
  const err = await readAttachment(join(root, 'link'), name).catch((e: ToolError) => e);
  t.equal((err as ToolError).code, 'ERR_TOOL_ATTACHMENT_NOT_FOUND');
});
