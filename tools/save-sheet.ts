import { constants, promises as fs } from 'node:fs';
import { join } from 'node:path';
import { ToolError } from './result.js';

/** A name fetch_sheet's `save_as` accepts: a plain file name ending in .csv (no folder, no dot first). */
export const SAVE_AS_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,95}\.csv$/;
/** The folder under the workspace where saved sheets go (run_python reads them as `sheets/<name>`). */
export const SHEETS_DIR = 'sheets';

/** One CSV field: quoted when it holds a comma, quote, CR or LF (RFC 4180). */
function field(v: string): string {
  return /[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v;
}

/**
 * Write the rows fetch_sheet read (the rows the data-access rules let through, nothing else) as a
 * CSV in /workspace/sheets/<name>, for run_python. The folder is made 0700 and lstat'ed (a link
 * is refused); the file is written through O_NOFOLLOW (a planted link is not followed) and
 * replaced when it exists. Returns the path relative to the workspace.
 */
export async function saveSheetCsv(workspace: string, name: string, rows: string[][]): Promise<string> {
  if (!SAVE_AS_RE.test(name) || name.includes('..'))
    throw new ToolError(
      'ERR_TOOL_INVALID_INPUT',
      'save_as must be a plain file name ending in .csv (letters, digits, . _ -), e.g. "sales.csv"',
    );
  const dir = join(workspace, SHEETS_DIR);
  await fs.mkdir(dir, { mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw err;
  });
  const st = await fs.lstat(dir);
  if (!st.isDirectory())
    throw new ToolError('ERR_TOOL_INVALID_INPUT', `${SHEETS_DIR}/ in the workspace is not a folder`);
  const csv = rows.map((r) => r.map(field).join(',')).join('\n') + (rows.length ? '\n' : '');
  let fh: fs.FileHandle;
  try {
    fh = await fs.open(
      join(dir, name),
      constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW,
      0o600,
    );
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ELOOP')
      throw new ToolError('ERR_TOOL_INVALID_INPUT', `${SHEETS_DIR}/${name} is a link; choose another name`);
    throw err;
  }
  try {
    await fh.writeFile(csv, 'utf8');
  } finally {
    await fh.close();
  }
  return `${SHEETS_DIR}/${name}`;
}
