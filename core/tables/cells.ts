/**
 * The parts of reading a table that do not depend on the file's format: caps, kinds, text
 * decoding, CSV, A1 ranges and the shaping of a grid (core/tables/index.ts re-exports them; the
 * XLSX reader imports them from here, a leaf).
 */
import { AppError } from '../errors.js';

export const TABLE_ROWS_MAX = 10_000;
export const TABLE_COLUMNS_MAX = 200;
export const ROW_MAX_CHARS = 256 * 1024;

/** Tables, pictures and documents (read_document: docs/tools.md#read_document). */
export type FileKind = 'csv' | 'xlsx' | 'png' | 'jpeg' | 'pdf' | 'docx' | 'pptx' | 'txt' | 'md' | 'json';
/** The kinds read_document reads. */
export const DOCUMENT_KINDS: readonly FileKind[] = ['pdf', 'docx', 'pptx', 'txt', 'md', 'json'];

export interface Table {
  /** The sheet read (XLSX) or the file name (CSV). */
  sheet: string;
  /** The A1 range the rows came from, as fetch_sheet says it. */
  range: string;
  rows: string[][];
  truncated: boolean;
  /** What was changed or left out, one sentence each (neutralised cells, dropped columns, bad bytes). */
  notes: string[];
  /** Sheets of the workbook (XLSX). */
  sheets?: string[];
}

export interface ReadOptions {
  sheet?: string;
  /** An A1 range such as A1:D20 (the sheet part, if any, is taken from `sheet`). */
  range?: string;
  maxRows?: number;
}

/** The kind a file name says, or undefined for one that is not accepted. */
export function kindOfName(name: string): FileKind | undefined {
  const m = /\.([A-Za-z]{2,8})$/.exec(name);
  const ext = m?.[1]?.toLowerCase();
  if (ext === 'csv') return 'csv';
  if (ext === 'xlsx') return 'xlsx';
  if (ext === 'png') return 'png';
  if (ext === 'jpg' || ext === 'jpeg') return 'jpeg';
  if (ext === 'pdf' || ext === 'docx' || ext === 'pptx' || ext === 'txt' || ext === 'md' || ext === 'json') return ext;
  if (ext === 'markdown') return 'md';
  return undefined;
}

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Whether the first bytes are what the kind says (PNG and JPEG signatures, a ZIP local header, text without NUL). */
export function sniff(kind: FileKind, buf: Buffer): boolean {
  if (kind === 'png') return buf.length > 8 && buf.subarray(0, 8).equals(PNG);
  if (kind === 'jpeg') return buf.length > 3 && buf[0] === 0xff && buf[1] === 0xd8 && buf[2] === 0xff;
  if (kind === 'xlsx' || kind === 'docx' || kind === 'pptx')
    return buf.length > 4 && buf.readUInt32LE(0) === 0x04034b50;
  if (kind === 'pdf') return buf.subarray(0, 1024).includes('%PDF-');
  const head = buf.subarray(0, 4096);
  const utf16 = (head[0] === 0xff && head[1] === 0xfe) || (head[0] === 0xfe && head[1] === 0xff);
  return utf16 || !head.includes(0);
}

/** Text of a CSV: UTF-8 (BOM dropped) or UTF-16 LE/BE with a BOM; `replaced` when bad bytes became U+FFFD. */
export function decodeText(buf: Buffer): { text: string; encoding: string; replaced: boolean } {
  let encoding = 'utf-8';
  let body = buf;
  if (buf[0] === 0xff && buf[1] === 0xfe) [encoding, body] = ['utf-16le', buf.subarray(2)];
  else if (buf[0] === 0xfe && buf[1] === 0xff) [encoding, body] = ['utf-16be', buf.subarray(2)];
  else if (buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf) body = buf.subarray(3);
  try {
    return {
      text: new TextDecoder(encoding, { fatal: true, ignoreBOM: true }).decode(body),
      encoding,
      replaced: false,
    };
  } catch {
    return { text: new TextDecoder(encoding, { ignoreBOM: true }).decode(body), encoding, replaced: true };
  }
}

const NUMBER = /^[+-]?(\d+([.,]\d*)?|[.,]\d+)([eE][+-]?\d+)?%?$/;

/** A cell as data: a leading = + - @ tab or CR (formula injection) gets a `'`, unless the cell is a plain number. */
export function neutralise(cell: string): string {
  return /^[=+\-@\t\r]/.test(cell) && !NUMBER.test(cell) ? `'${cell}` : cell;
}

function delimiterOf(firstLine: string): string {
  const counts = [',', ';', '\t'].map((d) => [d, firstLine.split(d).length] as const);
  counts.sort((a, b) => b[1] - a[1]);
  return counts[0]![1] > 1 ? counts[0]![0] : ',';
}

/** RFC 4180 rows (quoted fields, "" inside quotes, CRLF or LF), at most `maxRows` + 1 read. */
export function parseCsv(text: string, maxRows: number): { rows: string[][]; more: boolean } {
  const d = delimiterOf(text.slice(0, text.search(/\r?\n|$/)));
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let chars = 0;
  let quoted = false;
  const endRow = () => {
    row.push(cell);
    if (!(row.length === 1 && row[0] === '')) rows.push(row);
    row = [];
    cell = '';
    chars = 0;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (++chars > ROW_MAX_CHARS)
      throw new AppError(
        'ERR_UPLOAD_ROW_TOO_LARGE',
        `row ${rows.length + 1} is longer than ${ROW_MAX_CHARS / 1024} KiB of text`,
      );
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"' && cell === '') quoted = true;
    else if (c === d) {
      row.push(cell);
      cell = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      endRow();
      if (rows.length > maxRows) return { rows: rows.slice(0, maxRows), more: true };
    } else cell += c;
  }
  if (cell !== '' || row.length) endRow();
  return { rows: rows.slice(0, maxRows), more: rows.length > maxRows };
}

/** Column letters → 0-based index (A → 0, AA → 26). */
export function columnIndex(letters: string): number {
  let n = 0;
  for (const ch of letters.toUpperCase()) n = n * 26 + (ch.charCodeAt(0) - 64);
  return n - 1;
}

export function columnLetters(i: number): string {
  let s = '';
  for (let n = i + 1; n > 0; n = Math.floor((n - 1) / 26)) s = String.fromCharCode(65 + ((n - 1) % 26)) + s;
  return s;
}

interface Box {
  r0: number;
  c0: number;
  r1: number;
  c1: number;
}

/** An A1 range (A1:D20, A:C, 2:10, B3) as a 0-based box; ERR_UPLOAD_RANGE otherwise. */
export function parseRange(range: string): Box {
  const m = /^([A-Z]{0,3})(\d{0,7})(?::([A-Z]{0,3})(\d{0,7}))?$/i.exec(range.trim());
  if (!m || (!m[1] && !m[2]))
    throw new AppError('ERR_UPLOAD_RANGE', `"${range.slice(0, 40)}" is not an A1 range such as A1:D20`);
  const [, ca, ra, cb, rb] = m;
  const two = m[3] !== undefined || m[4] !== undefined;
  const c0 = ca ? columnIndex(ca) : 0;
  const r0 = ra ? Number(ra) - 1 : 0;
  const c1 = two ? (cb ? columnIndex(cb) : Infinity) : ca ? c0 : Infinity;
  const r1 = two ? (rb ? Number(rb) - 1 : Infinity) : ra ? r0 : Infinity;
  return { r0, c0, r1, c1 };
}

/** Cut the grid to the range, the caps and `maxRows`; neutralise every cell. */
export function shape(grid: string[][], sheet: string, opts: ReadOptions, notes: string[], moreRows = false): Table {
  const box = opts.range ? parseRange(opts.range) : { r0: 0, c0: 0, r1: Infinity, c1: Infinity };
  const maxRows = Math.min(opts.maxRows ?? TABLE_ROWS_MAX, TABLE_ROWS_MAX);
  const c1 = Math.min(box.c1, box.c0 + TABLE_COLUMNS_MAX - 1);
  const inRange = grid.slice(box.r0, box.r1 === Infinity ? undefined : box.r1 + 1);
  if (inRange.some((r) => r.length > c1 + 1) && box.c1 === Infinity)
    notes.push(`columns past ${columnLetters(c1)} were left out (at most ${TABLE_COLUMNS_MAX})`);
  let neutralised = 0;
  const rows = inRange.slice(0, maxRows).map((r) =>
    r.slice(box.c0, c1 + 1).map((cell) => {
      const n = neutralise(cell);
      if (n !== cell) neutralised++;
      return n;
    }),
  );
  while (rows.length && rows[rows.length - 1]!.every((c) => c === '')) rows.pop();
  if (neutralised)
    notes.push(
      `${neutralised} cell(s) that looked like a formula (starting with = + - @ tab or CR) were prefixed with ' and read as text; nothing was evaluated`,
    );
  const width = rows.reduce((w, r) => Math.max(w, r.length), 0);
  const range = `${sheet}!${columnLetters(box.c0)}${box.r0 + 1}:${columnLetters(box.c0 + Math.max(width, 1) - 1)}${box.r0 + Math.max(rows.length, 1)}`;
  return { sheet, range, rows, truncated: moreRows || inRange.length > maxRows, notes };
}
