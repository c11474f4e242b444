import { AppError } from '../errors.js';
import { zipEntries, zipRead, type ZipEntry } from './zip.js';
import {
  columnIndex,
  parseRange,
  ROW_MAX_CHARS,
  shape,
  TABLE_ROWS_MAX,
  type ReadOptions,
  type Table,
} from './cells.js';

/**
 * The cells of one sheet of an XLSX workbook, as text. Only the parts needed are inflated
 * (workbook, its relationships, shared strings, the sheet), after zip.ts checked the caps. A
 * formula cell gives its cached value (`<v>`); the formula (`<f>`) is never read, let alone
 * evaluated. A part with a DOCTYPE is refused (no entity is ever expanded: only the five XML
 * entities and character references are decoded).
 */
const invalid = (why: string) => new AppError('ERR_UPLOAD_XLSX_INVALID', `the workbook cannot be read: ${why}`);

/** The five XML entities and character references (no other entity exists for these readers). */
export function unescapeXml(s: string): string {
  return s.replace(/&(lt|gt|amp|quot|apos|#\d{1,7}|#x[0-9a-fA-F]{1,6});/g, (_, e: string) => {
    if (e === 'lt') return '<';
    if (e === 'gt') return '>';
    if (e === 'amp') return '&';
    if (e === 'quot') return '"';
    if (e === 'apos') return "'";
    const code = e[1] === 'x' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
    return code <= 0x10ffff ? String.fromCodePoint(code) : '\ufffd';
  });
}

function attr(tag: string, name: string): string | undefined {
  const m = new RegExp(`\\s${name}="([^"]*)"`).exec(tag);
  return m ? unescapeXml(m[1]!) : undefined;
}

function part(buf: Buffer, entries: Map<string, ZipEntry>, name: string, required: boolean): string | undefined {
  const e = entries.get(name);
  if (!e) {
    if (required) throw invalid(`${name} is missing`);
    return undefined;
  }
  const xml = zipRead(buf, e).toString('utf8');
  if (/<!DOCTYPE/i.test(xml.slice(0, 4096))) throw invalid(`${name} has a DOCTYPE`);
  return xml;
}

/** Text of every <t> inside (a rich-text string has several runs). */
function textOf(xml: string): string {
  let s = '';
  for (const m of xml.matchAll(/<t(?:\s[^>]*)?>([^<]*)<\/t>/g)) s += unescapeXml(m[1]!);
  return s;
}

function sheetsOf(buf: Buffer, entries: Map<string, ZipEntry>): { name: string; path: string }[] {
  const wb = part(buf, entries, 'xl/workbook.xml', true)!;
  const rels = part(buf, entries, 'xl/_rels/workbook.xml.rels', true)!;
  const targets = new Map<string, string>();
  for (const m of rels.matchAll(/<Relationship\b[^>]*>/g)) {
    const id = attr(m[0], 'Id');
    const target = attr(m[0], 'Target');
    if (id && target) targets.set(id, target.startsWith('/') ? target.slice(1) : `xl/${target}`);
  }
  const out: { name: string; path: string }[] = [];
  for (const m of wb.matchAll(/<sheet\b[^>]*>/g)) {
    const name = attr(m[0], 'name');
    const path = targets.get(attr(m[0], 'r:id') ?? '');
    if (name && path) out.push({ name, path });
  }
  if (!out.length) throw invalid('it has no sheet');
  return out;
}

function cellValue(body: string, type: string | undefined, shared: string[]): string {
  if (type === 'inlineStr') return textOf(body);
  const v = /<v(?:\s[^>]*)?>([^<]*)<\/v>/.exec(body)?.[1];
  if (v === undefined) return '';
  const raw = unescapeXml(v);
  if (type === 's') return shared[Number(raw)] ?? '';
  if (type === 'b') return raw === '1' ? 'TRUE' : 'FALSE';
  return raw;
}

function grid(xml: string, shared: string[], lastRow: number): { rows: string[][]; more: boolean } {
  const rows: string[][] = [];
  let next = 0;
  for (const rm of xml.matchAll(/<row\b([^>]*?)(?:\/>|>([\s\S]*?)<\/row>)/g)) {
    const r = attr(rm[1]!, 'r');
    const index = r ? Number(r) - 1 : next;
    next = index + 1;
    if (index > lastRow) return { rows, more: true };
    const cells: string[] = [];
    let col = 0;
    let chars = 0;
    for (const cm of (rm[2] ?? '').matchAll(/<c\b([^>]*?)(?:\/>|>([\s\S]*?)<\/c>)/g)) {
      const ref = attr(cm[1]!, 'r');
      const letters = ref ? /^([A-Z]{1,3})/.exec(ref)?.[1] : undefined;
      col = letters ? columnIndex(letters) : col;
      const value = cellValue(cm[2] ?? '', attr(cm[1]!, 't'), shared);
      chars += value.length;
      if (chars > ROW_MAX_CHARS)
        throw new AppError(
          'ERR_UPLOAD_ROW_TOO_LARGE',
          `row ${index + 1} is longer than ${ROW_MAX_CHARS / 1024} KiB of text`,
        );
      if (col < 16384) cells[col] = value;
      col++;
    }
    rows[index] = Array.from(cells, (c) => c ?? '');
  }
  return { rows: Array.from(rows, (r) => r ?? []), more: false };
}

export function readXlsx(buf: Buffer, opts: ReadOptions): Table {
  const entries = zipEntries(buf);
  const sheets = sheetsOf(buf, entries);
  const sheet = opts.sheet === undefined ? sheets[0]! : sheets.find((s) => s.name === opts.sheet);
  if (!sheet)
    throw new AppError(
      'ERR_UPLOAD_SHEET_NOT_FOUND',
      `the workbook has no sheet "${opts.sheet}" (it has ${sheets.map((s) => `"${s.name}"`).join(', ')})`,
    );
  const sst = part(buf, entries, 'xl/sharedStrings.xml', false);
  const shared = sst ? [...sst.matchAll(/<si>([\s\S]*?)<\/si>/g)].map((m) => textOf(m[1]!)) : [];
  const box = opts.range ? parseRange(opts.range) : { r0: 0, r1: Infinity };
  const lastRow = box.r1 === Infinity ? box.r0 + TABLE_ROWS_MAX - 1 : box.r1;
  const { rows, more } = grid(part(buf, entries, sheet.path, true)!, shared, lastRow);
  const t = shape(rows, sheet.name, opts, [], more && box.r1 === Infinity);
  return { ...t, sheets: sheets.map((s) => s.name) };
}
