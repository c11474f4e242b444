import t from 'tap';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../helpers/app.js';
import { errorCode, startMcp } from '../helpers/mcp.js';
import { makeXlsx, makeZip, xlsxParts } from '../helpers/xlsx.js';

/**
 * read_file_table in the real tools MCP server (a child process over stdio, as the agent runs
 * it): tables of files in the uploads folder beside the attachments folder, in fetch_sheet's
 * shape, fed straight to rasterize_chart; hostile files answer coded errors.
 */
t.test('read_file_table reads uploaded CSV and XLSX, and rasterize_chart charts the rows', async (t) => {
  const ws = tempDir(t);
  const attachments = join(ws, '.agent-attachments');
  mkdirSync(attachments);
  const uploads = join(ws, 'uploads');
  mkdirSync(uploads);
  writeFileSync(join(uploads, 'sales.csv'), '\ufeffmonth,sales\nJan,120\nFeb,95\nMar,=HYPERLINK("x")\n');
  writeFileSync(
    join(uploads, 'book.xlsx'),
    makeXlsx({
      Q1: [
        ['m', 'v'],
        ['Jan', 5],
      ],
      Q2: [
        ['m', 'v'],
        ['Apr', 7],
        ['May', 9],
      ],
    }),
  );
  const zeros = Buffer.alloc(40 * 1024 * 1024);
  writeFileSync(
    join(uploads, 'bomb.xlsx'),
    makeZip([...xlsxParts({ S: [['a']] }), { name: 'a', data: zeros }, { name: 'b', data: zeros }]),
  );
  writeFileSync(join(ws, 'secret.csv'), 'top,secret\n');
  symlinkSync(join(ws, 'secret.csv'), join(uploads, 'link.csv'));
  const [tools, ext] = await Promise.all([
    startMcp(t, 'tools', { AGENT_ATTACHMENTS_DIR: attachments }),
    startMcp(t, 'extensions', { AGENT_ATTACHMENTS_DIR: attachments }),
  ]);

  const r = await tools.call('read_file_table', { name: 'sales.csv' });
  t.equal(errorCode(r), undefined, JSON.stringify(r.content));
  const out = r.structuredContent as { range: string; rows: string[][]; truncated: boolean; notes: string[] };
  t.same(
    out.rows,
    [
      ['month', 'sales'],
      ['Jan', '120'],
      ['Feb', '95'],
      ['Mar', '\'=HYPERLINK("x")'],
    ],
    'fetch_sheet rows; the formula came back as text',
  );
  t.equal(out.range, 'sales!A1:B4');
  t.equal(out.truncated, false);
  t.match(out.notes.join(' '), /formula/);
  t.same(
    (await tools.call('read_file_table', { name: 'uploads/sales.csv', range: 'A2:B3' })).structuredContent,
    {
      range: 'sales!A2:B3',
      rows: [
        ['Jan', '120'],
        ['Feb', '95'],
      ],
      truncated: false,
      sheet: 'sales',
      notes: [],
    },
    'a range, and the uploads/ prefix is accepted',
  );
  const x = (await tools.call('read_file_table', { name: 'book.xlsx', sheet: 'Q2' })).structuredContent as {
    rows: string[][];
    sheets: string[];
  };
  t.same(x.rows, [
    ['m', 'v'],
    ['Apr', '7'],
    ['May', '9'],
  ]);
  t.same(x.sheets, ['Q1', 'Q2']);

  const data = out.rows.slice(1, 3);
  const chart = await ext.call('rasterize_chart', {
    type: 'bar',
    title: 'sales.csv',
    labels: data.map((d) => d[0]),
    datasets: [{ label: 'sales', data: data.map((d) => Number(d[1])) }],
  });
  t.equal(errorCode(chart), undefined, 'the rows chart as they are');
  t.match((chart.structuredContent as { filename: string }).filename, /\.png$/);

  t.equal(errorCode(await tools.call('read_file_table', { name: 'bomb.xlsx' })), 'ERR_UPLOAD_ZIP_BOMB');
  const link = await tools.call('read_file_table', { name: 'link.csv' });
  t.equal(errorCode(link), 'ERR_UPLOAD_NOT_FOUND', 'a link is not followed');
  t.notMatch(JSON.stringify(link.content), /secret/, 'nothing of the link target in the answer');
  const missing = await tools.call('read_file_table', { name: '../secret.csv' });
  t.equal(errorCode(missing), 'ERR_UPLOAD_NOT_FOUND');
  t.match(
    JSON.stringify(missing.content),
    /the uploaded tables are: bomb\.xlsx, book\.xlsx, link\.csv, sales\.csv/,
    'the answer names the uploaded tables',
  );
  t.equal(
    errorCode(await tools.call('read_file_table', { name: 'book.xlsx', sheet: 'Nope' })),
    'ERR_UPLOAD_SHEET_NOT_FOUND',
  );
});
