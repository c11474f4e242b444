import { constants as fsc, promises as fsp, type Stats } from 'node:fs';

/** Why a file under a root was not opened (the caller maps every reason to one 404). */
export type BeneathRefusal =
  'bad_name' | 'not_found' | 'symlink' | 'not_directory' | 'not_regular' | 'wrong_owner' | 'hard_linked' | 'too_large';

/**
 * A plain Error, not an AppError: it never reaches a caller as is; every reader maps it to a
 * catalogued code (ERR_UPLOAD_*, a 404) and logs `reason`.
 */
export class BeneathError extends Error {
  readonly reason: BeneathRefusal;
  constructor(reason: BeneathRefusal, message: string) {
    super(message);
    this.reason = reason;
  }
}

export interface OpenBeneathOptions {
  /** The file's owner must be this uid (the sandbox user that wrote it). */
  ownerUid?: number;
  /** Largest file size accepted (bytes). */
  maxBytes: number;
}

const COMPONENT = /^(?!\.{1,2}$)[^/\0]{1,255}$/;

/**
 * Open `root/<parts…>` without following a symbolic link anywhere below `root`: the
 * equivalent of openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), which Node does not offer.
 *
 * Every component is opened relative to the previous one's file descriptor, through
 * `/proc/self/fd/<fd>/<name>` (the kernel resolves the fd's magic link to the very directory
 * that fd holds, so a rename or swap of a parent after it was opened changes nothing), with
 * O_NOFOLLOW, and O_DIRECTORY for the folders. A symlink as any component fails with ELOOP or
 * ENOTDIR; `.`/`..`/empty components are refused before any open. The fstat of each opened
 * folder is compared with the lstat taken just before, so even a kernel without those /proc
 * semantics cannot be walked across a link. The last component must be a regular file with a
 * single link, owned by `ownerUid` when given, and at most `maxBytes` long.
 *
 * `root` itself is trusted (the daemon owns it); the agent may own everything below it.
 * The caller closes the returned handle.
 */
export async function openBeneath(
  root: string,
  parts: readonly string[],
  opts: OpenBeneathOptions,
): Promise<{ fh: fsp.FileHandle; stat: Stats }> {
  if (!parts.length) throw new BeneathError('bad_name', 'no path components');
  for (const p of parts) if (!COMPONENT.test(p)) throw new BeneathError('bad_name', 'invalid path component');
  let dir = await openOrRefuse(root, fsc.O_RDONLY | fsc.O_DIRECTORY);
  try {
    for (let i = 0; i < parts.length - 1; i++) {
      const next = await descend(dir, parts[i]);
      await dir.close();
      dir = next;
    }
    const path = `/proc/self/fd/${dir.fd}/${parts[parts.length - 1]}`;
    // O_NONBLOCK: a FIFO planted under the name must not hang the open.
    const fh = await openOrRefuse(path, fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK);
    try {
      const stat = await fh.stat();
      if (!stat.isFile()) throw new BeneathError('not_regular', 'not a regular file');
      if (opts.ownerUid !== undefined && stat.uid !== opts.ownerUid)
        throw new BeneathError('wrong_owner', 'file not owned by the expected user');
      // A hard link would let a file from elsewhere on the same filesystem pass as this one.
      if (stat.nlink !== 1) throw new BeneathError('hard_linked', 'file has more than one link');
      if (stat.size > opts.maxBytes) throw new BeneathError('too_large', 'file too large');
      return { fh, stat };
    } catch (err) {
      await fh.close();
      throw err;
    }
  } finally {
    await dir.close();
  }
}

/**
 * Open the folder `part` of the open folder `dir` without following a link: it must be a folder
 * before the open, and the same one (device and inode) after it. The caller owns both handles.
 */
async function descend(dir: fsp.FileHandle, part: string): Promise<fsp.FileHandle> {
  const path = `/proc/self/fd/${dir.fd}/${part}`;
  const before = await lstatOrRefuse(path);
  if (before.isSymbolicLink()) throw new BeneathError('symlink', 'a path component is a symbolic link');
  if (!before.isDirectory()) throw new BeneathError('not_directory', 'a path component is not a directory');
  const next = await openOrRefuse(path, fsc.O_RDONLY | fsc.O_DIRECTORY | fsc.O_NOFOLLOW);
  const after = await next.stat().catch(async (err: unknown) => {
    await next.close();
    throw err;
  });
  if (after.dev !== before.dev || after.ino !== before.ino) {
    await next.close();
    throw new BeneathError('symlink', 'a path component changed while it was opened');
  }
  return next;
}

/**
 * Open the folder `root/<parts…>` the same way (no link followed below `root`), making each
 * missing folder with `mkdirMode` when given (made through the parent's descriptor: mkdir never
 * follows a link in its last component). Each folder made is handed to `made` (to chown it by its
 * descriptor). The caller closes the returned handle.
 */
export async function openDirBeneath(
  root: string,
  parts: readonly string[],
  mkdirMode?: number,
  made?: (fh: fsp.FileHandle) => Promise<void>,
): Promise<fsp.FileHandle> {
  for (const p of parts) if (!COMPONENT.test(p)) throw new BeneathError('bad_name', 'invalid path component');
  let dir = await openOrRefuse(root, fsc.O_RDONLY | fsc.O_DIRECTORY);
  try {
    for (const part of parts) {
      const path = `/proc/self/fd/${dir.fd}/${part}`;
      let fresh = false;
      if (mkdirMode !== undefined)
        fresh = await fsp.mkdir(path, mkdirMode).then(
          () => true,
          (err: NodeJS.ErrnoException) => (err.code === 'EEXIST' ? false : Promise.reject(refusal(err))),
        );
      const next = await descend(dir, part);
      await dir.close();
      dir = next;
      if (fresh && made) await made(dir);
    }
    return dir;
  } catch (err) {
    await dir.close();
    throw err;
  }
}

async function openOrRefuse(path: string, flags: number): Promise<fsp.FileHandle> {
  try {
    // Node opens every file with O_CLOEXEC already.
    return await fsp.open(path, flags);
  } catch (err) {
    throw refusal(err);
  }
}

async function lstatOrRefuse(path: string): Promise<Stats> {
  try {
    return await fsp.lstat(path);
  } catch (err) {
    throw refusal(err);
  }
}

function refusal(err: unknown): BeneathError {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ELOOP' || code === 'EMLINK') return new BeneathError('symlink', 'a path component is a symbolic link');
  if (code === 'ENOTDIR') return new BeneathError('not_directory', 'a path component is not a directory');
  return new BeneathError('not_found', `cannot open (${code ?? 'error'})`);
}
