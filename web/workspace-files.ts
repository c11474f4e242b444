import { constants as fsc, promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { AppError, type Logger } from '../core/index.js';
import { CHILD_GID, CHILD_UID } from '../core/sandbox-ids.js';
import { kindOfName, type FileKind } from '../core/tables/index.js';
import { BeneathError, openBeneath, openDirBeneath } from './open-beneath.js';

/**
 * Uploaded files in the user's workspace: `<data dir>/workspaces/<user id>/uploads/<name>`, which
 * the sandbox sees as `/workspace/uploads/<name>`. The agent owns the workspace, so every path
 * below `<data dir>/workspaces` is walked without following links (open-beneath.ts): the
 * uploads folder is made and opened through its parent's descriptor, a file is created with
 * O_CREAT|O_EXCL|O_NOFOLLOW in that descriptor (never over something the agent put there), then
 * chowned by its descriptor to the sandbox user (uid 1001) with mode 0644 so the agent can read it.
 */
export const UPLOADS_DIR = 'uploads';
/** The per-file cap (docs/chat.md#your-own-files). */
export const UPLOAD_MAX_BYTES = 10 * 1024 * 1024;
export const UPLOADS_LIST_MAX = 500;

export type { UploadedFile } from './chat-api.js';
import type { UploadedFile } from './chat-api.js';

/**
 * A safe file name from what the browser sent: the last path part only (`/` and `\`), NFC,
 * characters other than letters, digits, `.`, `-` and `_` become `_`, no leading dot, at most
 * 100 characters with the extension kept. ERR_UPLOAD_NAME when nothing is left,
 * ERR_UPLOAD_TYPE for an extension not accepted.
 */
export function safeName(raw: string): string {
  const base = (raw.split(/[/\\]/).pop() ?? '').normalize('NFC');
  let name = base.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^[._]+/, '');
  const ext = /\.[A-Za-z]{2,8}$/.exec(name)?.[0] ?? '';
  const stem = name.slice(0, name.length - ext.length).replace(/[._]+$/, '');
  if (!stem || !ext)
    throw new AppError('ERR_UPLOAD_NAME', 'give the file a name such as sales.csv (letters, digits, . - _)');
  name = `${stem.slice(0, 100 - ext.length)}${ext.toLowerCase()}`;
  if (!kindOfName(name))
    throw new AppError(
      'ERR_UPLOAD_TYPE',
      'only .csv, .xlsx, .png, .jpg, .jpeg, .pdf, .docx, .pptx, .txt, .md and .json files can be uploaded',
    );
  return name;
}

const asRoot = () => process.getuid?.() === 0;

async function chownChild(fh: fsp.FileHandle): Promise<void> {
  if (asRoot()) await fh.chown(CHILD_UID, CHILD_GID);
}

function withSuffix(name: string, n: number): string {
  if (n === 1) return name;
  const dot = name.lastIndexOf('.');
  return `${name.slice(0, dot)}-${n}${name.slice(dot)}`;
}

const FULL = new Set(['ENOSPC', 'EDQUOT']);
const quotaError = () => new AppError('ERR_UPLOAD_QUOTA', 'your workspace is full: the file does not fit in its quota');

/**
 * Write `data` as a new file in the uploads folder of the workspace at `root/<userDir>` (the
 * name gets -2, -3… when taken). Refused with ERR_UPLOAD_QUOTA when the workspace's file system
 * has not the room (statfs first, ENOSPC while writing: the partial file is removed).
 */
export async function saveUpload(root: string, userDir: string, wanted: string, data: Buffer): Promise<UploadedFile> {
  const ws = await openDirBeneath(root, [userDir]);
  let dir: fsp.FileHandle | undefined;
  try {
    const fs = await fsp.statfs(`/proc/self/fd/${ws.fd}`);
    if (fs.bavail * fs.bsize < data.length + 64 * 1024) throw quotaError();
    dir = await openDirBeneath(`/proc/self/fd/${ws.fd}`, [UPLOADS_DIR], 0o755, chownChild);
    for (let n = 1; n <= 100; n++) {
      const name = withSuffix(wanted, n);
      const path = `/proc/self/fd/${dir.fd}/${name}`;
      let fh: fsp.FileHandle;
      try {
        fh = await fsp.open(path, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, 0o644);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EEXIST' || code === 'ELOOP') continue;
        if (FULL.has(code ?? '')) throw quotaError();
        throw err;
      }
      try {
        await chownChild(fh);
        await fh.chmod(0o644);
        await fh.writeFile(data);
      } catch (err) {
        await fh.close();
        await fsp.unlink(path).catch(() => undefined);
        if (FULL.has((err as NodeJS.ErrnoException).code ?? '')) throw quotaError();
        throw err;
      }
      await fh.close();
      return { name, kind: kindOfName(name)!, bytes: data.length, uploaded_at: new Date().toISOString() };
    }
    throw new AppError('ERR_UPLOAD_NAME', 'too many files of that name: rename the file');
  } catch (err) {
    if (err instanceof BeneathError)
      throw new AppError(
        'ERR_UPLOAD_WORKSPACE',
        'the workspace cannot be written: its uploads folder is not a folder (move what is there away)',
      );
    throw err;
  } finally {
    await dir?.close();
    await ws.close();
  }
}

/** The uploaded files (regular files of an accepted kind), newest first. */
export async function listUploads(root: string, userDir: string): Promise<UploadedFile[]> {
  let dir: fsp.FileHandle;
  try {
    dir = await openDirBeneath(root, [userDir, UPLOADS_DIR]);
  } catch {
    return [];
  }
  try {
    const out: UploadedFile[] = [];
    for (const e of await fsp.readdir(`/proc/self/fd/${dir.fd}`, { withFileTypes: true })) {
      const kind = kindOfName(e.name);
      if (!e.isFile() || !kind || out.length >= UPLOADS_LIST_MAX) continue;
      const st = await fsp.lstat(`/proc/self/fd/${dir.fd}/${e.name}`).catch(() => undefined);
      if (st?.isFile() && st.nlink === 1)
        out.push({ name: e.name, kind, bytes: st.size, uploaded_at: st.mtime.toISOString() });
    }
    return out.sort((a, b) => b.uploaded_at.localeCompare(a.uploaded_at) || a.name.localeCompare(b.name));
  } finally {
    await dir.close();
  }
}

/** One uploaded file's bytes, read the way chart attachments are (no link, one link, owner, cap). */
export async function readUpload(
  dataDir: string,
  userId: number,
  name: string,
  log: Logger,
): Promise<{ kind: FileKind; data: Buffer }> {
  const kind = kindOfName(name);
  const missing = () => new AppError('ERR_UPLOAD_NOT_FOUND', `no uploaded file ${name.slice(0, 100)}`);
  if (!kind || !/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(name)) throw missing();
  const root = join(dataDir, 'workspaces');
  let fh: fsp.FileHandle | undefined;
  try {
    const owner = (await fsp.lstat(join(root, String(userId)))).uid;
    ({ fh } = await openBeneath(root, [String(userId), UPLOADS_DIR, name], {
      ownerUid: owner,
      maxBytes: UPLOAD_MAX_BYTES,
    }));
    return { kind, data: await fh.readFile() };
  } catch (err) {
    if (err instanceof BeneathError) log.warn({ event: 'upload_refused', reason: err.reason }, 'uploaded file refused');
    throw missing();
  } finally {
    await fh?.close();
  }
}
