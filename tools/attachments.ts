import { constants, promises as fs } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { dirname, join } from 'node:path';
import { ToolError } from './result.js';

/**
 * Attachment names: a canonical lower-case UUID (8-4-4-4-12 hex, any version) and `.png`,
 * nothing before or after. rasterize_chart writes exactly such names (randomUUID() is
 * lower case); upper case is refused so one file has one name.
 */
export const ATTACHMENT_NAME_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.png$/;
export const ATTACHMENT_MAX_BYTES = 5 * 1024 * 1024;
export const ATTACHMENTS_PER_MESSAGE_MAX = 10;
/** All attachments of one message together: base64 in MIME, then base64url as `raw`, stays under Gmail's 35 MB. */
export const ATTACHMENTS_TOTAL_MAX_BYTES = 15 * 1024 * 1024;
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * A file run_python wrote under /workspace/out (docs/tools.md#run_python): `out/<name>.<ext>`, the
 * name plain (letters, digits, `_` `-`, at most 60 characters, no dot but the extension), so no
 * folder, `..`, hidden file or look-alike passes; the extension one of OUT_TYPES (lower case).
 */
export const OUT_ATTACHMENT_RE = /^out\/([A-Za-z0-9][A-Za-z0-9_-]{0,59}\.(png|svg|csv|xlsx|json|txt))$/;

/**
 * The Content-Type each file type from out/ is mailed with. Only a PNG is shown inline in the
 * message; the others (SVG too: it may carry script, and mail clients do not show it inline)
 * are plain attachments (docs/tools.md#send_email).
 */
export const OUT_TYPES: Record<string, string> = {
  png: 'image/png',
  svg: 'image/svg+xml',
  csv: 'text/csv; charset=utf-8',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  json: 'application/json',
  txt: 'text/plain; charset=utf-8',
};

/** The extension of an attachment name (`png` for a chart). */
export function attachmentExt(name: string): string {
  return OUT_ATTACHMENT_RE.exec(name)?.[2] ?? 'png';
}

const ZIP_SIGNATURE = Buffer.from([0x50, 0x4b, 0x03, 0x04]);

/** Why a file's bytes do not fit its extension, or undefined when they do (the checks are the cheap, certain ones). */
function contentMismatch(ext: string, data: Buffer): string | undefined {
  if (ext === 'xlsx')
    return data.subarray(0, 4).equals(ZIP_SIGNATURE) ? undefined : 'is not an XLSX workbook (no zip signature)';
  // Text types: UTF-8 text, no NUL byte (a binary file renamed .csv is refused).
  if (data.includes(0)) return 'is not a text file (it holds NUL bytes)';
  if (ext === 'svg' && !/<svg[\s>]/i.test(data.subarray(0, 4096).toString('utf8')))
    return 'is not an SVG image (no <svg> element at its start)';
  return undefined;
}

/** The folder and file name an attachment name stands for (a chart in the attachments folder, or a PNG under /workspace/out). */
export function attachmentPlace(attachmentsDir: string, name: string): { dir: string; file: string } | undefined {
  if (ATTACHMENT_NAME_RE.test(name)) return { dir: attachmentsDir, file: name };
  const out = OUT_ATTACHMENT_RE.exec(name);
  return out ? { dir: join(dirname(attachmentsDir), 'out'), file: out[1]! } : undefined;
}

export function isAttachmentName(name: unknown): name is string {
  return typeof name === 'string' && ATTACHMENT_NAME_RE.test(name);
}

/**
 * Read one attachment safely: the name must match exactly; the attachments folder itself and
 * the file must not be symlinks (lstat, then open with O_NOFOLLOW so a swap in between fails);
 * the opened file must be a regular file (fstat on the descriptor), at most
 * ATTACHMENT_MAX_BYTES, and start with the PNG signature. O_NONBLOCK keeps a FIFO from
 * hanging the open.
 */
export async function readAttachment(attachmentsDir: string, name: unknown): Promise<Buffer> {
  const place = typeof name === 'string' ? attachmentPlace(attachmentsDir, name) : undefined;
  if (!place) {
    throw new ToolError(
      'ERR_TOOL_ATTACHMENT_NAME',
      'attachments must be a file name returned by rasterize_chart (a UUID followed by .png) or a file run_python wrote as out/<name>.png|svg|csv|xlsx|json|txt, nothing else',
    );
  }
  const dir = place.dir;
  const dirStat = await fs.lstat(dir).catch(() => undefined);
  if (!dirStat || !dirStat.isDirectory()) {
    throw new ToolError(
      'ERR_TOOL_ATTACHMENT_NOT_FOUND',
      `attachment ${name} not found; create it with rasterize_chart first`,
    );
  }
  const path = join(dir, place.file);
  const st = await fs.lstat(path).catch(() => undefined);
  if (!st)
    throw new ToolError(
      'ERR_TOOL_ATTACHMENT_NOT_FOUND',
      `attachment ${name} not found; create it with rasterize_chart first`,
    );
  if (st.isSymbolicLink() || !st.isFile())
    throw new ToolError('ERR_TOOL_ATTACHMENT_NOT_FILE', `attachment ${name} is not a regular file`);
  let fh: fs.FileHandle;
  try {
    fh = await fs.open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP')
      throw new ToolError('ERR_TOOL_ATTACHMENT_NOT_FILE', `attachment ${name} is not a regular file`);
    throw new ToolError('ERR_TOOL_ATTACHMENT_NOT_FOUND', `attachment ${name} cannot be read`, { cause: err });
  }
  try {
    const fst = await fh.stat();
    if (!fst.isFile()) throw new ToolError('ERR_TOOL_ATTACHMENT_NOT_FILE', `attachment ${name} is not a regular file`);
    if (fst.size > ATTACHMENT_MAX_BYTES) {
      throw new ToolError(
        'ERR_TOOL_ATTACHMENT_TOO_LARGE',
        `attachment ${name} is larger than ${ATTACHMENT_MAX_BYTES / (1024 * 1024)} MB`,
      );
    }
    // Read at most one byte past the limit: the file may grow after fstat.
    const buf = Buffer.alloc(fst.size + 1);
    let off = 0;
    for (;;) {
      const { bytesRead } = await fh.read(buf, off, buf.length - off, off);
      if (bytesRead === 0) break;
      off += bytesRead;
      if (off >= buf.length)
        throw new ToolError('ERR_TOOL_ATTACHMENT_TOO_LARGE', `attachment ${name} changed while being read`);
    }
    const data = buf.subarray(0, off);
    const ext = attachmentExt(name as string);
    if (ext !== 'png') {
      const why = contentMismatch(ext, data);
      if (why) throw new ToolError('ERR_TOOL_ATTACHMENT_CONTENT', `attachment ${name} ${why}`);
      return data;
    }
    if (data.length < PNG_SIGNATURE.length || !data.subarray(0, PNG_SIGNATURE.length).equals(PNG_SIGNATURE)) {
      throw new ToolError('ERR_TOOL_ATTACHMENT_NOT_PNG', `attachment ${name} is not a PNG image`);
    }
    return data;
  } finally {
    await fh.close();
  }
}

/**
 * The file name a chart attachment gets in the message: its title, slugged (letters and digits
 * of the title, lower case, accents dropped, anything else one hyphen, at most 60 characters),
 * then `.png`; `chart.png` when it has no usable title. Never a path, never a quote or a newline.
 */
export function chartFileName(title: string | undefined): string {
  const slug = (title ?? '')
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .slice(0, 60)
    .replace(/^-+|-+$/g, '');
  return `${slug || 'chart'}.png`;
}

/** The title rasterize_chart wrote beside a chart (`<uuid>.title`), or undefined (none, not a small regular file). */
export async function readAttachmentTitle(dir: string, name: string): Promise<string | undefined> {
  if (!isAttachmentName(name)) return undefined;
  const path = join(dir, name.replace(/\.png$/, '.title'));
  let fh: fs.FileHandle;
  try {
    fh = await fs.open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const st = await fh.stat();
    if (!st.isFile() || st.size > 1024) return undefined;
    const buf = Buffer.alloc(1024);
    const { bytesRead } = await fh.read(buf, 0, 1024, 0);
    return buf.toString('utf8', 0, bytesRead);
  } finally {
    await fh.close();
  }
}

/** Chart file names for one message, each once (`sales.png`, `sales-2.png`). */
export function uniqueNames(names: string[]): string[] {
  const seen = new Map<string, number>();
  return names.map((n) => {
    const k = (seen.get(n) ?? 0) + 1;
    seen.set(n, k);
    return k === 1 ? n : n.replace(/(\.[a-z]+)?$/, `-${k}$1`);
  });
}

/** A file run_python wrote under out/, as the chat keeps it: `<uuid>.<ext>` in the attachments folder. */
export interface KeptFile {
  /** `<uuid>.<ext>`: what the chat shows and serves (GET /api/chat/attachments/:name). */
  name: string;
  /** The path the code wrote (out/chart.png). */
  path: string;
  size: number;
}

/**
 * Keep the files a run_python call wrote under out/ with the chat (docs/tools.md#run_python): each
 * one of the OUT_TYPES, read as send_email reads it (no link followed, a regular file, at most
 * ATTACHMENT_MAX_BYTES, its content what its extension says), is copied to the attachments folder
 * as `<uuid>.<ext>` (created exclusively, 0600) with its file name beside it as `<uuid>.title`,
 * so a later call that overwrites out/chart.png does not change what an earlier answer shows.
 * At most ATTACHMENTS_PER_MESSAGE_MAX a call; the rest, and the ones refused, come back with why.
 */
export async function keepOutFiles(
  attachmentsDir: string,
  files: readonly { path: string }[],
  log?: { info(o: object, m: string): void },
): Promise<{ kept: KeptFile[]; skipped: { path: string; why: string }[] }> {
  const kept: KeptFile[] = [];
  const skipped: { path: string; why: string }[] = [];
  for (const { path } of files) {
    const m = OUT_ATTACHMENT_RE.exec(path);
    if (!m) {
      skipped.push({
        path,
        why: 'not shown in the chat: only out/<name>.png|svg|csv|xlsx|json|txt directly under out/ is',
      });
      continue;
    }
    if (kept.length >= ATTACHMENTS_PER_MESSAGE_MAX) {
      skipped.push({ path, why: `not shown in the chat: at most ${ATTACHMENTS_PER_MESSAGE_MAX} files a call are` });
      continue;
    }
    let data: Buffer;
    try {
      data = await readAttachment(attachmentsDir, path);
    } catch (err) {
      skipped.push({ path, why: `not shown in the chat: ${(err as Error).message}` });
      continue;
    }
    await fs.mkdir(attachmentsDir, { recursive: true, mode: 0o700 });
    const name = `${randomUUID()}.${m[2]}`;
    await fs.writeFile(join(attachmentsDir, name), data, { flag: 'wx', mode: 0o600 });
    await fs.writeFile(join(attachmentsDir, name.replace(/\.[a-z]+$/, '.title')), m[1]!, { flag: 'wx', mode: 0o600 });
    kept.push({ name, path, size: data.length });
  }
  for (const s of skipped) log?.info({ tool: 'run_python', path: s.path, why: s.why }, 'out file not kept');
  return { kept, skipped };
}
