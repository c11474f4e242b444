import { AppError } from '../errors.js';
import {
  decodeText,
  kindOfName,
  parseCsv,
  parseRange,
  shape,
  sniff,
  TABLE_ROWS_MAX,
  type ReadOptions,
  type Table,
} from './cells.js';
import { readXlsx } from './xlsx.js';

/**
 * Tables from files a user uploaded (CSV, XLSX), read as data only, for the chat's preview
 * (web/upload-routes.ts) and the agent's read_file_table tool (tools/). Rows come out in the
 * shape fetch_sheet returns: `string[][]`, at most TABLE_ROWS_MAX rows (`truncated` says so).
 *
 * Hostile content: formulas are never evaluated (an XLSX cell gives its cached value); a cell
 * that starts with = + - @ tab or CR and is not a plain number gets a leading `'` (so a
 * spreadsheet it is pasted or mailed into shows it as text); a row longer than ROW_MAX_CHARS is
 * refused; columns past TABLE_COLUMNS_MAX are dropped (and said so); text must be UTF-8 (BOM or
 * not) or UTF-16 with a BOM, otherwise it is read with U+FFFD for the bad bytes and said so (the
 * upload route refuses it instead).
 */
export * from './cells.js';

/** A table from a CSV or XLSX file's bytes (`name` says which). */
export function readTable(name: string, buf: Buffer, opts: ReadOptions = {}): Table {
  const kind = kindOfName(name);
  if (kind !== 'csv' && kind !== 'xlsx')
    throw new AppError('ERR_UPLOAD_TYPE', `${name} is not a table: only .csv and .xlsx files are read as tables`);
  if (!sniff(kind, buf))
    throw new AppError('ERR_UPLOAD_MISMATCH', `${name} is not a ${kind === 'csv' ? 'text (CSV)' : 'XLSX'} file`);
  if (kind === 'xlsx') return readXlsx(buf, opts);
  const { text, encoding, replaced } = decodeText(buf);
  const notes: string[] = [];
  if (replaced)
    notes.push(
      `the file is not valid ${encoding.toUpperCase()}: bytes that could not be read were replaced with U+FFFD`,
    );
  const box = opts.range ? parseRange(opts.range) : { r1: Infinity };
  const want = box.r1 === Infinity ? TABLE_ROWS_MAX : Math.min(TABLE_ROWS_MAX, box.r1 + 1);
  const { rows, more } = parseCsv(text, want);
  return shape(rows, name.replace(/\.csv$/i, ''), opts, notes, more && box.r1 === Infinity);
}
