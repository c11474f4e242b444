import type { IncomingMessage, ServerResponse } from 'node:http';
import { failed, sent, type Json, type ServiceHandler } from './google-common.js';

/**
 * Sheets API v4 values.get: GET /v4/spreadsheets/{id}/values/{range} → {range, majorDimension,
 * values}, with A1 ranges ("Tab!A1:B2", "'My tab'!A:C", "A1:B2", "Tab").
 */

export interface SeedSheet {
  /** Spreadsheet id as in its URL. */
  id: string;
  name: string;
  modifiedTime?: string;
  mimeType?: string;
  /** Tabs by title: rows of cell values (the first tab is the default for ranges without a title). */
  sheets: Record<string, (string | number | boolean | null)[][]>;
}

/** Column letters → 0-based index. */
function colIndex(letters: string): number {
  let n = 0;
  for (const ch of letters.toUpperCase()) n = n * 26 + (ch.charCodeAt(0) - 64);
  return n - 1;
}

function colLetters(i: number): string {
  let s = '';
  for (let n = i + 1; n > 0; n = Math.floor((n - 1) / 26)) s = String.fromCharCode(65 + ((n - 1) % 26)) + s;
  return s;
}

interface Cell {
  col?: number;
  row?: number;
}

function parseCell(ref: string): Cell | undefined {
  const m = /^([A-Za-z]{1,3})?(\d{1,7})?$/.exec(ref);
  if (!m || (!m[1] && !m[2])) return undefined;
  return { col: m[1] ? colIndex(m[1]) : undefined, row: m[2] ? Number(m[2]) - 1 : undefined };
}

/** Parse "Tab!A1:B2", "'My tab'!A:C", "A1:B2", "Tab" into a tab title and a box. */
export function parseA1(
  range: string,
  tabs: string[],
): { tab: string; r0: number; r1: number; c0: number; c1: number } | undefined {
  let tab: string | undefined;
  let cells = range;
  const bang = range.lastIndexOf('!');
  if (bang >= 0) {
    tab = range.slice(0, bang);
    cells = range.slice(bang + 1);
    if (/^'.*'$/.test(tab)) tab = tab.slice(1, -1).replace(/''/g, "'");
  } else if (tabs.includes(range.replace(/^'(.*)'$/, '$1'))) {
    tab = range.replace(/^'(.*)'$/, '$1');
    cells = '';
  }
  tab ??= tabs[0];
  if (tab === undefined || !tabs.includes(tab)) return undefined;
  const INF = Number.MAX_SAFE_INTEGER;
  if (cells === '') return { tab, r0: 0, r1: INF, c0: 0, c1: INF };
  const [a, b] = cells.split(':');
  const ca = parseCell(a);
  const cb = b === undefined ? ca : parseCell(b);
  if (!ca || !cb || cells.split(':').length > 2) return undefined;
  return { tab, r0: ca.row ?? 0, r1: cb.row ?? INF, c0: ca.col ?? 0, c1: cb.col ?? INF };
}

/** The values.get handler over the seeded spreadsheets. */
export function sheetsService(sheets: ReadonlyMap<string, SeedSheet>): ServiceHandler {
  return (req: IncomingMessage, res: ServerResponse, url: URL): boolean => {
    const path = url.pathname;
    const method = req.method ?? 'GET';
    const values = /^\/v4\/spreadsheets\/([^/]+)\/values\/([^/]+)$/.exec(path);
    if (values) {
      if (method !== 'GET') return failed(res, 405, 'METHOD_NOT_ALLOWED', 'Method not allowed');
      const id = decodeURIComponent(values[1]);
      const range = decodeURIComponent(values[2]);
      const s = sheets.get(id);
      if (!s) return failed(res, 404, 'NOT_FOUND', 'Requested entity was not found.');
      const box = parseA1(range, Object.keys(s.sheets));
      if (!box) return failed(res, 400, 'INVALID_ARGUMENT', `Unable to parse range: ${range}`);
      const grid = s.sheets[box.tab];
      const rows = grid
        .slice(box.r0, box.r1 === Number.MAX_SAFE_INTEGER ? undefined : box.r1 + 1)
        .map((r) =>
          r
            .slice(box.c0, box.c1 === Number.MAX_SAFE_INTEGER ? undefined : box.c1 + 1)
            .map((v) => (v === null ? '' : String(v))),
        );
      // Google trims trailing empty rows and cells.
      const trimmed = rows.map((r) => {
        let n = r.length;
        while (n > 0 && r[n - 1] === '') n--;
        return r.slice(0, n);
      });
      while (trimmed.length && trimmed[trimmed.length - 1].length === 0) trimmed.pop();
      const width = Math.max(0, ...grid.map((r) => r.length));
      const lastCol = Math.min(box.c1, Math.max(box.c0, width - 1));
      const lastRow = Math.min(box.r1, Math.max(box.r0, grid.length - 1));
      const quoted = /^[A-Za-z0-9_]+$/.test(box.tab) ? box.tab : `'${box.tab.replace(/'/g, "''")}'`;
      const out: Json = {
        range: `${quoted}!${colLetters(box.c0)}${box.r0 + 1}:${colLetters(lastCol)}${lastRow + 1}`,
        majorDimension: 'ROWS',
      };
      if (trimmed.length) out.values = trimmed;
      return sent(res, 200, out);
    }
    return false;
  };
}
