import { constants, promises as fs } from 'node:fs';
import { dirname, join } from 'node:path';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { AppError } from '../core/errors.js';
import { readTable, TABLE_ROWS_MAX } from '../core/tables/index.js';
import type { ToolsEnv } from './env.js';
import { ToolError, runTool, toolOk } from './result.js';

/** The uploads folder beside the attachments one: /workspace/uploads in a sandbox. */
export function uploadsDirOf(env: ToolsEnv): string {
  return join(dirname(env.attachmentsDir), 'uploads');
}

/** As the web app caps an upload. */
export const UPLOADED_FILE_MAX_BYTES = 10 * 1024 * 1024;
const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

async function names(dir: string, kinds: RegExp): Promise<string[]> {
  const list = await fs.readdir(dir).catch(() => [] as string[]);
  return list
    .filter((n) => kinds.test(n))
    .sort()
    .slice(0, 50);
}

/** The file's bytes: no link followed (the folder is lstat'ed, the file opened O_NOFOLLOW), a regular file under the cap. */
export async function readUploaded(
  dir: string,
  name: string,
  kinds = /\.(csv|xlsx)$/i,
  what = 'table',
): Promise<Buffer> {
  const notFound = async () => {
    const have = await names(dir, kinds);
    return new ToolError(
      'ERR_UPLOAD_NOT_FOUND',
      `no uploaded file ${name}; ${have.length ? `the uploaded ${what}s are: ${have.join(', ')}` : `the user has uploaded no ${what} (ask them to attach one in the chat)`}`,
    );
  };
  if (!NAME_RE.test(name)) throw await notFound();
  const d = await fs.lstat(dir).catch(() => undefined);
  if (!d?.isDirectory()) throw await notFound();
  let fh: fs.FileHandle;
  try {
    fh = await fs.open(join(dir, name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    throw await notFound();
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw await notFound();
    if (st.size > UPLOADED_FILE_MAX_BYTES)
      throw new ToolError(
        'ERR_UPLOAD_TOO_LARGE',
        `${name} is larger than ${UPLOADED_FILE_MAX_BYTES / (1024 * 1024)} MB`,
      );
    return await fh.readFile();
  } finally {
    await fh.close();
  }
}

/**
 * read_file_table: rows of a CSV or XLSX file the user uploaded into the chat
 * (/workspace/uploads), in fetch_sheet's shape ({range, rows, truncated}) plus the sheet, the
 * workbook's sheets and notes on what was neutralised or left out. Runs in the sandbox, on the
 * same readers as the chat's preview (core/tables): no formula is evaluated.
 */
export function registerReadFileTable(
  server: McpServer,
  env: ToolsEnv,
  log: { info(o: object, m: string): void; error(o: object, m: string): void },
): void {
  server.registerTool(
    'read_file_table',
    {
      description:
        'Read rows of a CSV or XLSX file the user uploaded into this chat (give its name, e.g. "sales.csv"; optionally a sheet of a workbook and an A1 range such as "A1:D20"). Returns rows like fetch_sheet, ready for rasterize_chart. Cells that look like formulas come back prefixed with \'.',
      inputSchema: {
        name: z.string().min(1).max(200),
        sheet: z
          .string()
          .max(100)
          .regex(/^[^\r\n]*$/)
          .optional(),
        range: z.string().max(40).optional(),
        max_rows: z.number().int().min(1).max(TABLE_ROWS_MAX).optional(),
      },
      outputSchema: {
        range: z.string(),
        rows: z.array(z.array(z.string())),
        truncated: z.boolean(),
        sheet: z.string(),
        sheets: z.array(z.string()).optional(),
        notes: z.array(z.string()),
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args) =>
      runTool(log, 'read_file_table', async () => {
        const name = args.name.replace(/^(\/workspace\/)?uploads\//, '');
        const data = await readUploaded(uploadsDirOf(env), name);
        try {
          const t = readTable(name, data, { sheet: args.sheet, range: args.range, maxRows: args.max_rows ?? 1000 });
          log.info({ tool: 'read_file_table', rows: t.rows.length }, 'file table read');
          return toolOk({
            range: t.range,
            rows: t.rows,
            truncated: t.truncated,
            sheet: t.sheet,
            ...(t.sheets ? { sheets: t.sheets } : {}),
            notes: t.notes,
          });
        } catch (err) {
          if (err instanceof AppError) throw new ToolError(err.code, err.message);
          throw err;
        }
      }),
  );
}
