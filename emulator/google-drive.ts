import type { IncomingMessage, ServerResponse } from 'node:http';
import { failed, sent, type ServiceHandler } from './google-common.js';

/** Drive API v3 files.list: GET /drive/v3/files?q=…&pageSize=…&orderBy=… → {kind, incompleteSearch, files}. */

export const SPREADSHEET_MIME = 'application/vnd.google-apps.spreadsheet';

export interface DriveFile {
  id: string;
  name: string;
  mimeType: string;
  modifiedTime: string;
}

interface Term {
  field: string;
  op: string;
  value: string | boolean;
}

/** A small parser for Drive's q language: terms joined by `and` (what our tools send). */
export function parseDriveQuery(q: string): Term[] | undefined {
  const terms: Term[] = [];
  const re =
    /\s*(mimeType|name|trashed|fullText)\s*(=|!=|contains)\s*(?:'((?:[^'\\]|\\.)*)'|(true|false))\s*(?:and\s+|$)/iy;
  let pos = 0;
  while (pos < q.length) {
    re.lastIndex = pos;
    const m = re.exec(q);
    if (!m) return undefined;
    const value = m[4] !== undefined ? m[4] === 'true' : m[3].replace(/\\(.)/g, '$1');
    terms.push({ field: m[1], op: m[2].toLowerCase(), value });
    pos = re.lastIndex;
  }
  return terms;
}

function matches(file: { name: string; mimeType: string }, t: Term): boolean {
  const actual = t.field === 'mimeType' ? file.mimeType : t.field === 'trashed' ? false : file.name;
  if (t.op === 'contains')
    return typeof t.value === 'string' && String(actual).toLowerCase().includes(t.value.toLowerCase());
  if (t.op === '=') return actual === t.value;
  return actual !== t.value;
}

/** The files.list handler over the seeded files. */
export function driveService(files: readonly DriveFile[]): ServiceHandler {
  return (req: IncomingMessage, res: ServerResponse, url: URL): boolean => {
    const path = url.pathname;
    const method = req.method ?? 'GET';
    if (path === '/drive/v3/files') {
      if (method !== 'GET') return failed(res, 405, 'METHOD_NOT_ALLOWED', 'Method not allowed');
      const terms = parseDriveQuery(url.searchParams.get('q') ?? '');
      if (!terms) return failed(res, 400, 'INVALID_ARGUMENT', 'Invalid Value');
      const pageSize = Number(url.searchParams.get('pageSize') ?? '100');
      if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 1000)
        return failed(res, 400, 'INVALID_ARGUMENT', 'Invalid Value');
      let found = files.filter((f) => terms.every((t) => matches(f, t)));
      const orderBy = url.searchParams.get('orderBy') ?? '';
      if (/^modifiedTime desc$/i.test(orderBy))
        found = found.slice().sort((a, b) => b.modifiedTime.localeCompare(a.modifiedTime));
      else if (/^name$/i.test(orderBy)) found = found.slice().sort((a, b) => a.name.localeCompare(b.name));
      return sent(res, 200, {
        kind: 'drive#fileList',
        incompleteSearch: false,
        files: found.slice(0, pageSize).map((f) => ({
          kind: 'drive#file',
          id: f.id,
          name: f.name,
          mimeType: f.mimeType,
          modifiedTime: f.modifiedTime,
        })),
      });
    }

    return false;
  };
}
