import t from 'tap';

type Tap = { teardown(fn: () => unknown): void };
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { simpleParser } from 'mailparser';
import { start as startGoogle, type GoogleSeed } from '../../emulator/google.js';
import { tempDir } from '../helpers/app.js';
import { errorCode, startMcp } from '../helpers/mcp.js';

const SEED: GoogleSeed = {
  spreadsheets: [
    {
      id: 'sheet-sales-2026',
      name: 'Sales 2026',
      modifiedTime: '2026-11-01T10:00:00.000Z',
      sheets: {
        Q4: [
          ['Region', 'Revenue'],
          ['North', 120],
          ['South', 95],
          ['East', 143],
        ],
      },
    },
    {
      id: 'sheet-budget',
      name: 'Budget plan',
      modifiedTime: '2026-10-01T10:00:00.000Z',
      sheets: {
        Sheet1: [
          ['Item', 'Cost'],
          ['Laptops', 9000],
        ],
      },
    },
  ],
  files: [{ id: 'doc-sales', name: 'Sales notes', mimeType: 'application/vnd.google-apps.document' }],
};

const AGENT_USER_TOKEN = 'aut1.not-for-spreadsheets.x';

interface Fixture {
  google: Awaited<ReturnType<typeof startGoogle>>;
  dir: string;
  tools: Awaited<ReturnType<typeof startMcp>>;
  ext: Awaited<ReturnType<typeof startMcp>>;
}
let fixture: Fixture | undefined;

/**
 * One emulator and one process of each server for the whole file (spawning node is the slow
 * part on a shared machine); each test starts from an empty request log and mailbox.
 */
async function setup(_t: Tap): Promise<Fixture> {
  if (!fixture) {
    const google = await startGoogle({ seed: SEED });
    t.teardown(() => google.close());
    const dir = join(tempDir(t), 'attachments');
    mkdirSync(dir, { mode: 0o700 });
    const env = {
      MAIL_BASE_URL: google.url,
      MAIL_API_KEY: google.token,
      MAIL_FROM: 'alice@example.test',
      SHEETS_BASE_URL: google.url,
      SHEETS_API_KEY: google.token,
      SEARCH_SHEETS_BASE_URL: google.url,
      SEARCH_SHEETS_API_KEY: google.token,
      AGENT_USER_TOKEN,
      AGENT_ATTACHMENTS_DIR: dir,
    };
    const [tools, ext] = await Promise.all([
      startMcp(t, 'tools', env),
      startMcp(t, 'extensions', { AGENT_ATTACHMENTS_DIR: dir }),
    ]);
    fixture = { google, dir, tools, ext };
  }
  fixture.google.requests.length = 0;
  fixture.google.mailbox.length = 0;
  fixture.google.acceptTokens([fixture.google.token]);
  return fixture;
}

t.test('both MCP servers list their tools with input schemas', async (t) => {
  const { tools, ext } = await setup(t);
  const a = (await tools.client.listTools()).tools;
  t.same(a.map((x) => x.name).sort(), [
    'fetch_memory',
    'fetch_sheet',
    'read_document',
    'read_file_table',
    'run_python',
    'search_spreadsheets',
    'send_email',
  ]);
  const send = a.find((x) => x.name === 'send_email')!;
  t.equal(send.inputSchema.type, 'object');
  t.same([...(send.inputSchema.required as string[])].sort(), ['subject', 'to']);
  t.ok((send.inputSchema.properties as Record<string, unknown>).attachments, 'attachments in schema');
  t.ok(
    a.every((x) => x.description && x.outputSchema),
    'descriptions and output schemas',
  );
  const b = (await ext.client.listTools()).tools;
  t.same(b.map((x) => x.name).sort(), ['rasterize_chart', 'render_chart']);
  for (const x of b) {
    t.same(
      Object.keys(x.inputSchema.properties ?? {}).sort(),
      ['datasets', 'height', 'horizontal', 'labels', 'legend', 'title', 'type', 'width', 'x_axis', 'y_axis'],
      `${x.name} has the chart arguments`,
    );
  }
  const typeProp = (b[0].inputSchema.properties as Record<string, { enum?: string[] }>).type;
  t.same(typeProp.enum, ['bar', 'line', 'pie', 'doughnut', 'scatter']);
});

t.test('fetch_sheet and search_spreadsheets talk Sheets/Drive and never send AGENT_USER_TOKEN', async (t) => {
  const { tools, google } = await setup(t);
  const sheet = await tools.call('fetch_sheet', { spreadsheet_id: 'sheet-sales-2026', range: 'Q4!A1:B3' });
  t.notOk(sheet.isError, JSON.stringify(sheet.content));
  t.same(sheet.structuredContent, {
    range: 'Q4!A1:B3',
    rows: [
      ['Region', 'Revenue'],
      ['North', '120'],
      ['South', '95'],
    ],
    truncated: false,
  });
  // save_as: the same rows as a CSV in the workspace's sheets/ folder, for run_python.
  const saved = await tools.call('fetch_sheet', {
    spreadsheet_id: 'sheet-sales-2026',
    range: 'Q4!A1:B3',
    save_as: 'q4.csv',
  });
  t.equal((saved.structuredContent as { saved_as: string }).saved_as, 'sheets/q4.csv');
  t.equal(
    readFileSync(join(dirname(fixture!.dir), 'sheets', 'q4.csv'), 'utf8'),
    'Region,Revenue\nNorth,120\nSouth,95\n',
  );
  for (const bad of ['../x.csv', 'x.txt', '.hidden.csv', 'a/b.csv', 'x..csv']) {
    t.equal(
      errorCode(await tools.call('fetch_sheet', { spreadsheet_id: 'sheet-sales-2026', range: 'Q4', save_as: bad })),
      'ERR_TOOL_INVALID_INPUT',
      `save_as ${bad} refused`,
    );
  }
  symlinkSync('/etc/passwd', join(dirname(fixture!.dir), 'sheets', 'link.csv'));
  t.equal(
    errorCode(
      await tools.call('fetch_sheet', { spreadsheet_id: 'sheet-sales-2026', range: 'Q4', save_as: 'link.csv' }),
    ),
    'ERR_TOOL_INVALID_INPUT',
    'a planted link is not followed',
  );
  const capped = await tools.call('fetch_sheet', { spreadsheet_id: 'sheet-sales-2026', range: 'Q4', max_rows: 2 });
  t.equal((capped.structuredContent as { truncated: boolean }).truncated, true);
  const missing = await tools.call('fetch_sheet', { spreadsheet_id: 'nope', range: 'A1:B2' });
  t.equal(errorCode(missing), 'ERR_TOOL_NOT_FOUND');

  const found = await tools.call('search_spreadsheets', { query: 'sales' });
  t.notOk(found.isError);
  t.same(
    found.structuredContent,
    { files: [{ id: 'sheet-sales-2026', name: 'Sales 2026', modified_time: '2026-11-01T10:00:00.000Z' }] },
    'only spreadsheets, by name',
  );
  const all = await tools.call('search_spreadsheets', { query: '' });
  t.same(
    (all.structuredContent as { files: { id: string }[] }).files.map((f) => f.id),
    ['sheet-sales-2026', 'sheet-budget'],
    'newest first',
  );
  const quote = await tools.call('search_spreadsheets', { query: "O'Brien \\ x" });
  t.notOk(quote.isError, 'quotes and backslashes are escaped in q');

  const drive = google.requests.find((r) => r.path === '/drive/v3/files')!;
  t.match(drive.query.q, /mimeType = 'application\/vnd\.google-apps\.spreadsheet'/);
  t.ok(google.requests.length >= 5);
  for (const r of google.requests) {
    t.equal(r.headers.authorization, `Bearer ${google.token}`, `${r.path} uses the placeholder key`);
    t.notOk(JSON.stringify(r).includes(AGENT_USER_TOKEN), 'AGENT_USER_TOKEN never sent');
  }
});

t.test('rasterize_chart → send_email: the raw message parses with mailparser, PNG inline by cid', async (t) => {
  const { tools, ext, google, dir } = await setup(t);
  const chart = await ext.call('rasterize_chart', {
    type: 'bar',
    title: 'Revenue',
    labels: ['North', 'South'],
    datasets: [{ label: 'EUR k', data: [120, 95] }],
    width: 640,
    height: 320,
  });
  t.notOk(chart.isError, JSON.stringify(chart.content));
  const att = chart.structuredContent as { type: string; filename: string; width: number; height: number };
  t.equal(att.type, 'chart_attachment');
  t.match(att.filename, /^[0-9a-f-]{36}\.png$/);
  t.same([att.width, att.height], [640, 320]);
  t.notOk(JSON.stringify(chart.content).includes('iVBOR'), 'no image bytes reach the model');
  const png = readFileSync(join(dir, att.filename));

  const filesBefore = readdirSync(dir).sort();
  const rendered = await ext.call('render_chart', { type: 'line', labels: ['a', 'b'], datasets: [{ data: [1, 2] }] });
  t.same(rendered.structuredContent, {
    type: 'chart',
    spec: { type: 'line', labels: ['a', 'b'], datasets: [{ data: [1, 2] }], width: 800, height: 400 },
  });
  t.same(readdirSync(dir).sort(), filesBefore, 'render_chart writes no file, also when it succeeds');

  const sent = await tools.call('send_email', {
    to: ['bob@example.test'],
    cc: ['carol@example.test'],
    subject: 'Revenue by region',
    text: 'See the chart.',
    html: `<p>See the chart:</p><img src="cid:${att.filename}">`,
    attachments: [att.filename],
  });
  t.notOk(sent.isError, JSON.stringify(sent.content));
  t.equal((sent.structuredContent as { attachments: number }).attachments, 1);

  t.equal(google.requests.length, 1);
  const req = google.requests[0];
  t.equal(req.method, 'POST');
  t.equal(req.path, '/mail/v1/users/me/messages/send');
  t.equal(req.headers.authorization, `Bearer ${google.token}`);
  const body = JSON.parse(req.body) as { raw: string };
  t.same(Object.keys(body), ['raw']);
  t.match(body.raw, /^[A-Za-z0-9_-]+$/, 'base64url without padding');
  const parsed = await simpleParser(Buffer.from(body.raw, 'base64url'), { keepCidLinks: true });
  t.equal(parsed.from?.value[0].address, 'alice@example.test');
  t.same(
    (Array.isArray(parsed.to) ? parsed.to : [parsed.to!]).flatMap((a) => a.value.map((v) => v.address)),
    ['bob@example.test'],
  );
  t.same(
    (Array.isArray(parsed.cc) ? parsed.cc : [parsed.cc!]).flatMap((a) => a.value.map((v) => v.address)),
    ['carol@example.test'],
  );
  t.equal(parsed.subject, 'Revenue by region');
  t.equal(parsed.text?.trim(), 'See the chart.');
  t.match(String(parsed.html), `cid:${att.filename}`);
  t.equal(parsed.attachments.length, 1);
  const a = parsed.attachments[0];
  t.equal(a.contentType, 'image/png');
  t.equal(a.cid, att.filename);
  t.equal(a.contentDisposition, 'inline');
  t.ok(a.content.equals(png), 'inline PNG bytes identical to the file');

  t.equal(google.mailbox.length, 1, 'the emulator keeps the parsed message');
  const page = await (await fetch(`${google.url}/mailbox/${google.mailbox[0].id}`)).text();
  t.match(page, `data:image/png;base64,${png.toString('base64').slice(0, 40)}`, 'mailbox page resolves cid: images');
  t.notMatch(page, 'cid:', 'no unresolved cid left');
  const list = await (await fetch(`${google.url}/mailbox`)).text();
  t.match(list, 'Revenue by region');

  // A PNG run_python wrote under /workspace/out goes as out/<name>.png, named as written.
  const outDir = join(dirname(dir), 'out');
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'growth.png'), png);
  symlinkSync(join(dir, att.filename), join(outDir, 'link.png'));
  google.requests.length = 0;
  const fromOut = await tools.call('send_email', {
    to: ['bob@example.test'],
    subject: 'Growth',
    text: 'Chart attached.',
    attachments: ['out/growth.png'],
  });
  t.notOk(fromOut.isError, JSON.stringify(fromOut.content));
  const outMsg = await simpleParser(
    Buffer.from((JSON.parse(google.requests[0].body) as { raw: string }).raw, 'base64url'),
    { keepCidLinks: true },
  );
  t.match(outMsg.attachments, [{ filename: 'growth.png', cid: 'out-growth.png', contentType: 'image/png' }]);
  t.ok(outMsg.attachments[0].content.equals(png), 'the bytes of out/growth.png');
  // CSV, XLSX, SVG from out/ go as plain attachments with their own Content-Type; the PNG stays inline.
  const csv = Buffer.from('region,growth\nnorth,0.12\n');
  const xlsx = Buffer.concat([Buffer.from([0x50, 0x4b, 0x03, 0x04]), Buffer.alloc(60, 1)]);
  const svg = Buffer.from(
    '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
  );
  writeFileSync(join(outDir, 'growth.csv'), csv);
  writeFileSync(join(outDir, 'growth.xlsx'), xlsx);
  writeFileSync(join(outDir, 'growth.svg'), svg);
  writeFileSync(join(outDir, 'fake.xlsx'), 'region,growth\n');
  writeFileSync(join(outDir, 'binary.csv'), Buffer.from([0x61, 0x00, 0x62]));
  writeFileSync(join(outDir, 'plain.svg'), 'not an image');
  google.requests.length = 0;
  const files = await tools.call('send_email', {
    to: ['bob@example.test'],
    subject: 'Files',
    text: 'Files attached.',
    attachments: ['out/growth.csv', 'out/growth.xlsx', 'out/growth.svg', 'out/growth.png'],
  });
  t.notOk(files.isError, JSON.stringify(files.content));
  const filesMsg = await simpleParser(
    Buffer.from((JSON.parse(google.requests[0].body) as { raw: string }).raw, 'base64url'),
    { keepCidLinks: true },
  );
  const byName = new Map(filesMsg.attachments.map((a) => [a.filename, a]));
  for (const [name, type, disposition, bytes] of [
    ['growth.csv', 'text/csv', 'attachment', csv],
    ['growth.xlsx', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', 'attachment', xlsx],
    ['growth.svg', 'image/svg+xml', 'attachment', svg],
    ['growth.png', 'image/png', 'inline', png],
  ] as const) {
    t.equal(byName.get(name)?.contentType, type, `${name}: ${type}`);
    t.equal(byName.get(name)?.contentDisposition, disposition, `${name}: ${disposition}`);
    t.ok(byName.get(name)?.content.equals(bytes), `${name}: its bytes`);
  }
  t.notMatch(String(filesMsg.html), 'growth.svg', 'the SVG is not shown in the HTML body');
  google.requests.length = 0;
  for (const [bad, code] of [
    ['out/fake.xlsx', 'ERR_TOOL_ATTACHMENT_CONTENT'],
    ['out/binary.csv', 'ERR_TOOL_ATTACHMENT_CONTENT'],
    ['out/plain.svg', 'ERR_TOOL_ATTACHMENT_CONTENT'],
    ['out/growth.gif', 'ERR_TOOL_ATTACHMENT_NAME'],
    ['out/growth.CSV', 'ERR_TOOL_ATTACHMENT_NAME'],
    ['out/../growth.png', 'ERR_TOOL_ATTACHMENT_NAME'],
    ['out/a/growth.png', 'ERR_TOOL_ATTACHMENT_NAME'],
    ['out/.growth.png', 'ERR_TOOL_ATTACHMENT_NAME'],
    ['/workspace/out/growth.png', 'ERR_TOOL_ATTACHMENT_NAME'],
    ['out/link.png', 'ERR_TOOL_ATTACHMENT_NOT_FILE'],
    ['out/missing.png', 'ERR_TOOL_ATTACHMENT_NOT_FOUND'],
  ]) {
    t.equal(
      errorCode(
        await tools.call('send_email', { to: ['bob@example.test'], subject: 'x', text: 'x', attachments: [bad] }),
      ),
      code,
      `${bad} refused`,
    );
  }
  t.equal(google.requests.length, 0, 'nothing sent for a refused attachment');

  // A text-only message with no attachments is a single text/plain part.
  const plain = await tools.call('send_email', { to: ['bob@example.test'], subject: 'Plain', text: 'hello' });
  t.notOk(plain.isError);
  const raw2 = Buffer.from(JSON.parse(google.requests.at(-1)!.body).raw, 'base64url').toString();
  t.match(raw2, /Content-Type: text\/plain/);
  t.notMatch(raw2, /multipart/);

  // The Gmail token expired inside the warm session: the tool says so.
  google.acceptTokens([]);
  const expired = await tools.call('send_email', { to: ['bob@example.test'], subject: 'Again', text: 'x' });
  t.equal(errorCode(expired), 'ERR_TOOL_TOKEN_EXPIRED');
  t.match(JSON.stringify(expired.content), /expired in this session/);
});

t.test('hostile attachment names and files are refused and nothing is sent', async (t) => {
  const { tools, ext, google, dir } = await setup(t);
  const good = (await ext.call('rasterize_chart', { type: 'pie', labels: ['a', 'b'], datasets: [{ data: [1, 2] }] }))
    .structuredContent as { filename: string };
  const u = randomUUID();
  const outside = join(dir, '..', 'secret.png');
  writeFileSync(outside, readFileSync(join(dir, good.filename)));
  const links = randomUUID();
  symlinkSync(outside, join(dir, `${links}.png`));
  const linkPasswd = randomUUID();
  symlinkSync('/etc/passwd', join(dir, `${linkPasswd}.png`));
  const asDir = randomUUID();
  mkdirSync(join(dir, `${asDir}.png`));
  const fifo = randomUUID();
  execFileSync('mkfifo', [join(dir, `${fifo}.png`)]);
  const big = randomUUID();
  const png = readFileSync(join(dir, good.filename));
  writeFileSync(join(dir, `${big}.png`), Buffer.concat([png, Buffer.alloc(5 * 1024 * 1024)]));
  const notPng = randomUUID();
  writeFileSync(join(dir, `${notPng}.png`), 'root:x:0:0:root:/root:/bin/bash\n');

  const hostile: [string, string][] = [
    ['../../etc/passwd', 'ERR_TOOL_ATTACHMENT_NAME'],
    ['/etc/passwd', 'ERR_TOOL_ATTACHMENT_NAME'],
    ['..', 'ERR_TOOL_ATTACHMENT_NAME'],
    ['', 'ERR_TOOL_ATTACHMENT_NAME'],
    ['chart.png', 'ERR_TOOL_ATTACHMENT_NAME'],
    [`../${u}.png`, 'ERR_TOOL_ATTACHMENT_NAME'],
    [`./${u}.png`, 'ERR_TOOL_ATTACHMENT_NAME'],
    [`sub/${u}.png`, 'ERR_TOOL_ATTACHMENT_NAME'],
    [`${dir}/${good.filename}`, 'ERR_TOOL_ATTACHMENT_NAME'],
    [`${u.toUpperCase()}.png`, 'ERR_TOOL_ATTACHMENT_NAME'],
    [`${u}.PNG`, 'ERR_TOOL_ATTACHMENT_NAME'],
    [`${u}.jpg`, 'ERR_TOOL_ATTACHMENT_NAME'],
    [`${u}.png.exe`, 'ERR_TOOL_ATTACHMENT_NAME'],
    [`${u}.svg`, 'ERR_TOOL_ATTACHMENT_NAME'],
    [u, 'ERR_TOOL_ATTACHMENT_NAME'],
    [`${u.replace(/-/g, '')}.png`, 'ERR_TOOL_ATTACHMENT_NAME'],
    [`${good.filename}\n`, 'ERR_TOOL_ATTACHMENT_NAME'],
    [`${good.filename}\u0000`, 'ERR_TOOL_ATTACHMENT_NAME'],
    [` ${good.filename}`, 'ERR_TOOL_ATTACHMENT_NAME'],
    [`${good.filename}/`, 'ERR_TOOL_ATTACHMENT_NAME'],
    [`..%2f${u}.png`, 'ERR_TOOL_ATTACHMENT_NAME'],
    [`\uff10${u.slice(1)}.png`, 'ERR_TOOL_ATTACHMENT_NAME'],
    [`${links}.png`, 'ERR_TOOL_ATTACHMENT_NOT_FILE'],
    [`${linkPasswd}.png`, 'ERR_TOOL_ATTACHMENT_NOT_FILE'],
    [`${asDir}.png`, 'ERR_TOOL_ATTACHMENT_NOT_FILE'],
    [`${fifo}.png`, 'ERR_TOOL_ATTACHMENT_NOT_FILE'],
    [`${big}.png`, 'ERR_TOOL_ATTACHMENT_TOO_LARGE'],
    [`${notPng}.png`, 'ERR_TOOL_ATTACHMENT_NOT_PNG'],
    [`${u}.png`, 'ERR_TOOL_ATTACHMENT_NOT_FOUND'],
  ];
  t.ok(hostile.length >= 12);
  for (const [name, code] of hostile) {
    // The hostile name rides along with a good one: one bad attachment stops the whole send.
    const r = await tools.call('send_email', {
      to: ['bob@example.test'],
      subject: 'x',
      text: 'x',
      attachments: [good.filename, name],
    });
    t.equal(errorCode(r), code, `refused: ${JSON.stringify(name)}`);
  }
  const tooMany = await tools.call('send_email', {
    to: ['bob@example.test'],
    subject: 'x',
    text: 'x',
    attachments: Array(11).fill(good.filename),
  });
  t.ok(tooMany.isError, 'more than 10 attachments refused by the schema');
  // Each file under 5 MiB, together over 15 MiB.
  const quarter = Array.from({ length: 4 }, () => `${randomUUID()}.png`);
  for (const q of quarter) writeFileSync(join(dir, q), Buffer.concat([png, Buffer.alloc(4 * 1024 * 1024)]));
  const heavy = await tools.call('send_email', {
    to: ['bob@example.test'],
    subject: 'x',
    text: 'x',
    attachments: quarter,
  });
  t.equal(errorCode(heavy), 'ERR_TOOL_ATTACHMENT_TOO_LARGE', 'total size capped');
  t.equal(google.requests.length, 0, 'the emulator recorded no request');
  t.equal(google.mailbox.length, 0);

  const ok = await tools.call('send_email', {
    to: ['bob@example.test'],
    subject: 'x',
    text: 'x',
    attachments: [good.filename],
  });
  t.notOk(ok.isError, 'the good name alone is sent');
  t.equal(google.requests.length, 1);
});

t.test('header injection and bad input are refused by the schemas', async (t) => {
  const { tools, google } = await setup(t);
  const cases: Record<string, unknown>[] = [
    { to: ['bob@example.test'], subject: 'a\r\nBcc: eve@evil.test', text: 'x' },
    { to: ['bob@example.test\r\nBcc: eve@evil.test'], subject: 'a', text: 'x' },
    { to: [], subject: 'a', text: 'x' },
    { to: ['not-an-address'], subject: 'a', text: 'x' },
    { to: ['bob@example.test'], subject: 'a' },
  ];
  for (const c of cases) t.ok((await tools.call('send_email', c)).isError, `refused ${JSON.stringify(c).slice(0, 60)}`);
  t.ok((await tools.call('fetch_sheet', { spreadsheet_id: '../x', range: 'A1' })).isError);
  t.equal(google.requests.length, 0);
});

t.test('without the routes every workspace tool says to connect the account', async (t) => {
  const tools = await startMcp(t, 'tools', { AGENT_ATTACHMENTS_DIR: tempDir(t) });
  for (const [name, args] of [
    ['fetch_sheet', { spreadsheet_id: 'x', range: 'A1' }],
    ['search_spreadsheets', { query: 'x' }],
    ['send_email', { to: ['a@example.test'], subject: 's', text: 't' }],
  ] as const) {
    const r = await tools.call(name, args);
    t.equal(errorCode(r), 'ERR_TOOL_NOT_CONNECTED', name);
    t.match(JSON.stringify(r.content), 'connect your workspace account, then start a new chat session');
  }
  t.equal(errorCode(await tools.call('fetch_memory', {})), 'ERR_TOOL_MEMORY_UNAVAILABLE');
  t.notMatch(tools.stderr(), /"msg":"tool failed"/, 'no unexpected failures');
});
