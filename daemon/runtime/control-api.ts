/**
 * The daemon's operator control socket: <data dir>/control.sock, unix, mode 0600 (root/owner
 * only). One NDJSON request per connection: {cmd, id?, userId?} → {ok:true,data} | {ok:false,error}.
 * `kill-user` (with `userId`) removes every live sandbox of that user: `airlock sync-directory`
 * uses it for the users a sync deactivated, as `serve` does in-process.
 */
import { chmodSync, unlinkSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { AppError, isAppError, type Logger } from '../../core/index.js';
import { readLines, writeLine } from '../../supervisor/ndjson.js';

export const CONTROL_SOCKET_NAME = 'control.sock';
const CLIENT_TIMEOUT_MS = 60_000;

export interface ControlApiRequest {
  cmd: 'ls' | 'inspect' | 'restart' | 'restart-stale' | 'kill' | 'kill-user';
  /** Session or container id (inspect, restart, kill). */
  id?: string;
  /** Local user id (kill-user). */
  userId?: number;
}

export type ControlApiHandler = (req: ControlApiRequest) => Promise<unknown>;

export interface ControlApiServer {
  path: string;
  close(): Promise<void>;
}

export async function startControlApi(dataDir: string, handler: ControlApiHandler, log: Logger): Promise<ControlApiServer> {
  const path = join(dataDir, CONTROL_SOCKET_NAME);
  try {
    unlinkSync(path);
  } catch {
    // no stale socket from a previous run
  }
  const server: Server = createServer((sock) => {
    sock.on('error', () => sock.destroy());
    let handled = false;
    readLines(sock, (m) => {
      if (handled) return;
      handled = true;
      const req = m as ControlApiRequest;
      handler(req).then(
        (data) => sock.end(JSON.stringify({ ok: true, data }) + '\n'),
        (err) => {
          const e = isAppError(err) ? err : new AppError('ERR_INTERNAL', 'internal error');
          if (!isAppError(err)) log.error({ err }, 'control api failed');
          sock.end(JSON.stringify({ ok: false, error: { code: e.code, message: e.message, status: e.status } }) + '\n');
        },
      );
    });
  });
  // Create the socket with a restrictive umask-like chmod right after listen.
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => resolve());
  });
  chmodSync(path, 0o600);
  let closing: Promise<void> | undefined;
  return {
    path,
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        try {
          unlinkSync(path);
        } catch {
          // already removed
        }
      })),
  };
}

/** Send one request to the running daemon. ERR_DAEMON_NOT_RUNNING when nobody listens. */
export function controlRequest(dataDir: string, req: ControlApiRequest): Promise<unknown> {
  const path = join(dataDir, CONTROL_SOCKET_NAME);
  return new Promise((resolve, reject) => {
    const sock = createConnection(path);
    sock.setTimeout(CLIENT_TIMEOUT_MS, () => {
      sock.destroy();
      reject(new AppError('ERR_DAEMON_TIMEOUT', 'the daemon did not answer in time', { status: 504 }));
    });
    let done = false;
    sock.on('error', (err: NodeJS.ErrnoException) => {
      if (done) return;
      done = true;
      if (err.code === 'ENOENT' || err.code === 'ECONNREFUSED') {
        reject(new AppError('ERR_DAEMON_NOT_RUNNING', `the airlock daemon is not running (no control socket at ${path}); start it with \`airlock serve\``, { status: 503, cause: err }));
      } else reject(new AppError('ERR_DAEMON_UNREACHABLE', `cannot reach the daemon: ${err.code ?? err.message}`, { status: 503, cause: err }));
    });
    readLines(sock, (m) => {
      if (done) return;
      done = true;
      sock.end();
      const r = m as { ok: boolean; data?: unknown; error?: { code: string; message: string; status?: number } };
      if (r.ok) resolve(r.data);
      else reject(new AppError(r.error?.code ?? 'ERR_INTERNAL', r.error?.message ?? 'failed', { status: r.error?.status ?? 500 }));
    });
    sock.on('connect', () => writeLine(sock, req));
  });
}
