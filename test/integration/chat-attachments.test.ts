/**
 * The files run_python kept with a chat, as the web app serves them (docs/chat.md "run_python in
 * the chat"): GET /api/chat/attachments/:name for the owner and GET /api/share/:token/attachments/:name
 * for a viewer of a share link. Each kind with its own type; every one under a sandboxed CSP with
 * nothing allowed (an SVG's script never runs, even opened on its own) and no sniffing; a file
 * that is not an image as a download; another user, another type or a name the shared turns do
 * not carry gets 404. Runs on SQLite and PostgreSQL.
 */
import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import * as chat from '../../domain/chat/store.js';
import { addUser, startTestApp } from '../helpers/app.js';
import { TEST_ENGINE } from '../helpers/db.js';
import { PNG_1PX } from '../helpers/xlsx.js';

const SVG = '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>';

const JSON_TEXT = '{"a": 1, "note": "<b>shown as text</b>"}';

t.test(`run_python's kept files: types, headers, owner and share link (${TEST_ENGINE})`, async (t) => {
  const app = await startTestApp(t, {
    services: { chat: { runner: { runTurn: async () => ({ stop_reason: 'end_turn' }) } } },
  });
  const db = app.database.sql;
  const ann = await addUser(app.database, 'ann', 'pw-123456789');
  await addUser(app.database, 'bob', 'pw-123456789');
  const ws = join(app.config.dataDir, 'workspaces', String(ann.id), '.agent-attachments');
  mkdirSync(ws, { recursive: true });
  const files = {
    png: `${randomUUID()}.png`,
    svg: `${randomUUID()}.svg`,
    csv: `${randomUUID()}.csv`,
    json: `${randomUUID()}.json`,
    html: `${randomUUID()}.html`,
  };
  writeFileSync(join(ws, files.png), PNG_1PX);
  writeFileSync(join(ws, files.svg), SVG);
  writeFileSync(join(ws, files.csv), 'region,growth\nNorth,3\n');
  writeFileSync(join(ws, files.json), JSON_TEXT);
  writeFileSync(join(ws, files.html), '<script>alert(1)</script>');

  const annC = app.client();
  t.equal((await annC.login('ann', 'pw-123456789')).status, 200);
  const get = async (c: typeof annC, path: string) => {
    const r = await c.request('GET', path);
    return {
      status: r.status,
      type: r.headers.get('content-type'),
      csp: r.headers.get('content-security-policy'),
      sniff: r.headers.get('x-content-type-options'),
      disposition: r.headers.get('content-disposition'),
      body: Buffer.from(await r.arrayBuffer()),
    };
  };
  const expect = {
    png: ['image/png', null],
    svg: ['image/svg+xml', null],
    csv: ['text/csv; charset=utf-8', 'attachment'],
    json: ['application/json; charset=utf-8', 'attachment'],
  } as const;
  for (const [kind, [type, disposition]] of Object.entries(expect)) {
    const r = await get(annC, `/api/chat/attachments/${files[kind as keyof typeof expect]}`);
    t.same(
      [r.status, r.type, r.csp, r.sniff, r.disposition],
      [200, type, "default-src 'none'; sandbox", 'nosniff', disposition],
      `${kind}: its type, sandboxed, ${disposition ? 'downloaded' : 'shown'}`,
    );
  }
  t.equal(
    (await get(annC, `/api/chat/attachments/${files.svg}`)).body.toString(),
    SVG,
    'the SVG as written (its script cannot run under the CSP)',
  );
  t.equal(
    (await get(annC, `/api/chat/attachments/${files.html}`)).status,
    404,
    'a type that is not kept is not served',
  );
  // What the chat shows of a file that is not an image: a table's first rows, a text's start.
  const csvPreview = await annC.json('GET', `/api/chat/attachments/${files.csv}/preview`);
  t.same(
    [csvPreview.status, csvPreview.body.kind, csvPreview.body.table?.rows],
    [
      200,
      'csv',
      [
        ['region', 'growth'],
        ['North', '3'],
      ],
    ],
    'a CSV: its first rows',
  );
  const jsonPreview = await annC.json('GET', `/api/chat/attachments/${files.json}/preview`);
  t.same(
    [jsonPreview.status, jsonPreview.body.kind, jsonPreview.body.text],
    [200, 'json', { text: JSON_TEXT, truncated: false }],
    'a JSON file: its text',
  );
  t.match(
    await annC.json('GET', `/api/chat/attachments/${files.png}/preview`),
    { status: 404, body: { error: { code: 'ERR_CHAT_ATTACHMENT_NOT_FOUND' } } },
    'an image has no preview',
  );
  t.equal(
    (await annC.json('GET', `/api/chat/attachments/${files.html}/preview`)).status,
    404,
    'a type that is not kept has none either',
  );
  const bobC = app.client();
  t.equal((await bobC.login('bob', 'pw-123456789')).status, 200);
  t.equal((await get(bobC, `/api/chat/attachments/${files.csv}`)).status, 404, "another user's files are not reached");
  t.equal((await bobC.json('GET', `/api/chat/attachments/${files.csv}/preview`)).status, 404, 'nor their previews');

  // A share link serves the files its turns name, with the same headers, and nothing else.
  const s = await chat.createSession(db, ann.id, 'Growth');
  const turnId = randomUUID();
  const placed = await chat.placeTurn(db, s.id);
  await chat.startTurn(db, s.id, turnId, 'which region grew fastest', placed.parent);
  await chat.toolStarted(db, turnId, 'c1', 'run_python', { code: 'df.to_csv("out/data.csv")' });
  await chat.toolEnded(
    db,
    turnId,
    'c1',
    'run_python',
    true,
    { stdout: '', attachments: [{ name: files.csv, path: 'out/data.csv', size: 21 }] },
    undefined,
    5,
  );
  await chat.endTurn(db, turnId, 'North.', 'end_turn', undefined, false, {});
  const made = await annC.json('POST', `/api/chat/sessions/${s.id}/share`);
  t.equal(made.status, 201);
  const token = made.body.token as string;
  const shared = await get(bobC, `/api/share/${token}/attachments/${files.csv}`);
  t.same(
    [shared.status, shared.type, shared.csp, shared.disposition],
    [200, 'text/csv; charset=utf-8', "default-src 'none'; sandbox", 'attachment'],
  );
  t.equal(shared.body.toString(), 'region,growth\nNorth,3\n');
  const sharedPreview = await bobC.json('GET', `/api/share/${token}/attachments/${files.csv}/preview`);
  t.same(
    [sharedPreview.status, sharedPreview.body.table?.rows],
    [
      200,
      [
        ['region', 'growth'],
        ['North', '3'],
      ],
    ],
    "the share link shows the file's preview too",
  );
  t.equal(
    (await bobC.json('GET', `/api/share/${token}/attachments/${files.json}/preview`)).status,
    404,
    'not of a file the shared turns do not name',
  );
  t.equal(
    (await get(bobC, `/api/share/${token}/attachments/${files.json}`)).status,
    404,
    'a file the shared turns do not name is not served',
  );

  // The export carries it too (Markdown links it; the JSON export lists it).
  const md = await annC.request('GET', `/api/chat/sessions/${s.id}/export?format=markdown`);
  t.match(await md.text(), `[${files.csv}](attachments/${files.csv})`);
});
