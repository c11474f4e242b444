import t from 'tap';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger } from '../../core/index.js';
import { WorkspaceVolumes } from '../../daemon/runtime/workspaces.js';
import { createSession } from '../../domain/chat/store.js';
import { addUser, startTestApp, tempDir } from '../helpers/app.js';
import type { Client } from '../helpers/client.js';
import { makePdf } from '../helpers/documents.js';
import { makeZip, PNG_1PX, xlsxParts, makeXlsx } from '../helpers/xlsx.js';

/**
 * The upload routes on the real web app with real workspaces: as root with e2fsprogs, each
 * user's workspace is its own loop-mounted ext4 of AIRLOCK_WORKSPACE_QUOTA_MB (the quota case
 * runs only there); otherwise plain folders.
 */
async function upload(c: Client, sid: string, name: string, data: Buffer, headers: Record<string, string> = {}) {
  const res = await fetch(`${c.base}/api/chat/sessions/${sid}/files`, {
    method: 'POST',
    headers: {
      cookie: c.cookieHeader(),
      'x-csrf-token': c.csrf ?? '',
      'content-type': 'application/octet-stream',
      'x-file-name': encodeURIComponent(name),
      ...headers,
    },
    body: new Uint8Array(data),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

t.test('upload, list, preview and read back; owner only; hostile files refused', async (t) => {
  const dataDir = tempDir(t);
  const log = createLogger({ level: 'error' });
  const volumes = new WorkspaceVolumes(dataDir, 16, log);
  volumes.init();
  t.teardown(() => volumes.unmountAll());
  const app = await startTestApp(t, { dataDir, services: { workspaces: volumes } });
  const alice = await addUser(app.database, 'alice', 'alice-password-123');
  await addUser(app.database, 'bob', 'bob-password-1234');
  const a = app.client();
  t.equal((await a.login('alice', 'alice-password-123')).status, 200);
  const b = app.client();
  t.equal((await b.login('bob', 'bob-password-1234')).status, 200);
  const chat = await createSession(app.database.sql, alice.id, 'hello');
  const bobUser = (await b.json('GET', '/api/auth/me')).body;
  const bobChat = await createSession(app.database.sql, Number(bobUser.user?.id ?? bobUser.id), 'hi');

  const csv = Buffer.from('month,sales\nJan,120\nFeb,=1+1\n');
  const up = await upload(a, chat.id, 'sales.csv', csv);
  t.equal(up.status, 201, JSON.stringify(up.body));
  t.equal(up.body.file.name, 'sales.csv');
  t.same(
    up.body.preview.table.rows,
    [
      ['month', 'sales'],
      ['Jan', '120'],
      ['Feb', "'=1+1"],
    ],
    'the preview is the first rows, a formula neutralised',
  );
  const onDisk = join(dataDir, 'workspaces', String(alice.id), 'uploads', 'sales.csv');
  t.same(readFileSync(onDisk), csv, 'stored in the workspace under uploads/');
  const st = lstatSync(onDisk);
  if (process.getuid?.() === 0) t.equal(st.uid, 1001, 'owned by the sandbox user, so the agent can read it');
  t.equal(st.mode & 0o777, 0o644);
  t.equal(
    (await upload(a, chat.id, 'sales.csv', csv)).body.file.name,
    'sales-2.csv',
    'a taken name gets a suffix, never overwrites',
  );

  const trick = await upload(a, chat.id, '../../../etc/passwd.csv', csv);
  t.equal(trick.body.file.name, 'passwd.csv', 'path parts are dropped');
  t.notOk(existsSync(join(dataDir, 'etc')), 'nothing written outside uploads/');
  t.equal((await upload(a, chat.id, 'r\u00e9sum\u00e9 (1).png', PNG_1PX)).body.file.name, 'r_sum_1.png');

  const list = await a.json('GET', `/api/chat/sessions/${chat.id}/files`);
  t.same(list.body.files.map((f: { name: string }) => f.name).sort(), [
    'passwd.csv',
    'r_sum_1.png',
    'sales-2.csv',
    'sales.csv',
  ]);
  t.match(list.body.files[0], { name: String, kind: String, bytes: Number, uploaded_at: String });
  const img = await a.request('GET', `/api/chat/sessions/${chat.id}/files/r_sum_1.png`);
  t.equal(img.headers.get('content-type'), 'image/png');
  t.same(Buffer.from(await img.arrayBuffer()), PNG_1PX);
  const pv = await a.json('GET', `/api/chat/sessions/${chat.id}/files/sales.csv/preview`);
  t.equal(pv.body.table.rows.length, 3);
  const xl = await upload(
    a,
    chat.id,
    'book.xlsx',
    makeXlsx({
      Q1: [
        ['m', 'v'],
        ['Jan', 5],
      ],
      Q2: [
        ['m', 'v'],
        ['Apr', 7],
      ],
    }),
  );
  t.same(xl.body.preview.table.sheets, ['Q1', 'Q2']);
  t.same((await a.json('GET', `/api/chat/sessions/${chat.id}/files/book.xlsx/preview?sheet=Q2`)).body.table.rows, [
    ['m', 'v'],
    ['Apr', '7'],
  ]);
  // A text file's preview is its start, as text: 4 KiB of a longer one, said so. (A Markdown
  // file was refused by its name, `.md` being two letters, until this test.)
  const notes = 'line of notes\n'.repeat(400);
  const md = await upload(a, chat.id, 'notes.md', Buffer.from(notes));
  t.same(
    [md.status, md.body.preview.kind, md.body.preview.text?.truncated, md.body.preview.text?.text.length],
    [201, 'md', true, 4096],
    'a long Markdown file: its first 4 KiB',
  );
  t.same((await upload(a, chat.id, 'data.json', Buffer.from('{"a": [1, 2]}'))).body.preview, {
    name: 'data.json',
    kind: 'json',
    text: { text: '{"a": [1, 2]}', truncated: false },
  });
  t.equal(
    (await upload(a, chat.id, 'readme.markdown', Buffer.from('# Title\n'))).body.preview?.kind,
    'md',
    '.markdown too',
  );
  t.same(
    (await upload(a, chat.id, 'report.pdf', makePdf([['Page one']]))).body.preview,
    { name: 'report.pdf', kind: 'pdf' },
    'a document: no preview of its own',
  );

  // Owner only: another user's chat reads as missing, and the file is not in their workspace.
  t.equal((await upload(b, chat.id, 'x.csv', csv)).status, 404, "bob cannot upload into alice's chat");
  t.equal((await b.json('GET', `/api/chat/sessions/${chat.id}/files`)).status, 404);
  t.equal((await b.json('GET', `/api/chat/sessions/${chat.id}/files/sales.csv`)).status, 404);
  const viaOwn = await b.json('GET', `/api/chat/sessions/${bobChat.id}/files/sales.csv`);
  t.equal(viaOwn.status, 404);
  t.equal(viaOwn.body.error.code, 'ERR_UPLOAD_NOT_FOUND', "alice's file is not reachable through bob's own chat");
  t.same((await b.json('GET', `/api/chat/sessions/${bobChat.id}/files`)).body.files, []);
  t.equal((await upload(a, chat.id, 'x.csv', csv, { 'x-csrf-token': 'wrong' })).status, 403, 'CSRF like every POST');
  // Before a chat exists (a new chat's composer): /api/chat/files, the user's own workspace.
  const first = await fetch(`${a.base}/api/chat/files`, {
    method: 'POST',
    headers: {
      cookie: a.cookieHeader(),
      'x-csrf-token': a.csrf ?? '',
      'content-type': 'application/octet-stream',
      'x-file-name': 'early.csv',
    },
    body: new Uint8Array(csv),
  });
  t.equal(first.status, 201);
  t.equal((await a.json('GET', '/api/chat/files/early.csv/preview')).body.table.rows[0][0], 'month');
  t.equal(
    (await b.json('GET', '/api/chat/files/early.csv/preview')).status,
    404,
    "another user's /api/chat/files is their own workspace: 404",
  );
  t.equal((await b.json('GET', '/api/chat/files/early.csv')).status, 404);

  // Hostile files.
  const refused = async (
    name: string,
    data: Buffer,
    status: number,
    code: string,
    headers?: Record<string, string>,
  ) => {
    const r = await upload(a, chat.id, name, data, headers);
    t.equal(r.status, status, `${name}: ${status}`);
    t.equal(r.body?.error?.code, code, `${name}: ${code}: ${r.body?.error?.message}`);
  };
  await refused('big.png', Buffer.concat([PNG_1PX, Buffer.alloc(10 * 1024 * 1024)]), 413, 'ERR_UPLOAD_TOO_LARGE');
  await refused('photo.jpg', PNG_1PX, 415, 'ERR_UPLOAD_MISMATCH');
  await refused('table.xlsx', csv, 415, 'ERR_UPLOAD_MISMATCH');
  await refused('latin1.csv', Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2c, 0x31]), 422, 'ERR_UPLOAD_ENCODING');
  const zeros = Buffer.alloc(40 * 1024 * 1024);
  await refused(
    'bomb.xlsx',
    makeZip([...xlsxParts({ S: [['a']] }), { name: 'a', data: zeros }, { name: 'b', data: zeros }]),
    422,
    'ERR_UPLOAD_ZIP_BOMB',
  );
  await refused('run.exe', csv, 415, 'ERR_UPLOAD_TYPE');
  await refused('.csv', csv, 400, 'ERR_UPLOAD_NAME');
  await refused('empty.csv', Buffer.alloc(0), 400, 'ERR_UPLOAD_BODY');
  await refused('nohdr.csv', csv, 400, 'ERR_UPLOAD_BODY', { 'x-file-name': '' });
  t.same(
    readdirSync(join(dataDir, 'workspaces', String(alice.id), 'uploads')).sort(),
    [
      'book.xlsx',
      'data.json',
      'early.csv',
      'notes.md',
      'passwd.csv',
      'r_sum_1.png',
      'readme.markdown',
      'report.pdf',
      'sales-2.csv',
      'sales.csv',
    ],
    'nothing refused was written',
  );

  // Links the agent made are never followed.
  const ws = join(dataDir, 'workspaces', String(alice.id));
  const outside = join(dataDir, 'outside');
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret.csv'), 'top,secret\n');
  symlinkSync(join(outside, 'secret.csv'), join(ws, 'uploads', 'linked.csv'));
  t.equal(
    (await a.json('GET', `/api/chat/sessions/${chat.id}/files/linked.csv/preview`)).status,
    404,
    'a symlinked file is not read',
  );
  t.notOk(
    (await a.json('GET', `/api/chat/sessions/${chat.id}/files`)).body.files.some(
      (f: { name: string }) => f.name === 'linked.csv',
    ),
    'nor listed',
  );
  const bobWs = volumes.ensure(Number(bobUser.user?.id ?? bobUser.id));
  symlinkSync(outside, join(bobWs, 'uploads'));
  t.equal((await upload(b, bobChat.id, 'planted.csv', csv)).status, 409, 'an uploads folder that is a link is refused');
  t.same(readdirSync(outside), ['secret.csv'], 'nothing written through the link');

  if (volumes.quota) {
    const big = Buffer.concat([PNG_1PX, Buffer.alloc(9 * 1024 * 1024)]);
    t.equal((await upload(a, chat.id, 'one.png', big)).status, 201);
    await refused('two.png', big, 507, 'ERR_UPLOAD_QUOTA');
    t.notOk(existsSync(join(ws, 'uploads', 'two.png')), 'no partial file left');
  } else t.comment('quota case skipped: workspaces are plain folders here (not root or no mkfs.ext4)');
});
