/**
 * The daemon's operator control socket: <data dir>/control.sock, unix, mode 0600 (root/owner
 * only). One NDJSON request per connection: {cmd, id?, userId?} → {ok:true,data} | {ok:false,error}.
 * `kill-user` (with `userId`) removes every live sandbox of that user: `airlock sync-directory`
 * uses it for the users a sync deactivated, as `serve` does in-process.
 *
 * Both ends check what they read: the daemon checks each request against
 * ControlApiRequestSchema, the CLI checks the reply against ControlApiResponseSchema (and the
 * reply's `data` against the schema the command passes). A bad line is answered (server) or
 * rejected (client) with an ERR_PROTOCOL_* code and logged without its payload.
 */
import { chmodSync, unlinkSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { z } from 'zod';
import {
  AppError,
  appErrorFromPeer,
  checkMessage,
  createLogger,
  isAppError,
  protocolLogFields,
  readMessages,
  writeMessage,
  type Logger,
} from '../../core/index.js';

export const CONTROL_SOCKET_NAME = 'control.sock';
const CLIENT_TIMEOUT_MS = 60_000;

export interface ControlApiRequest {
  cmd: 'ls' | 'inspect' | 'logs' | 'restart' | 'restart-stale' | 'kill' | 'kill-user';
  /** Session or container id (inspect, logs, restart, kill). */
  id?: string;
  /** Last lines of the log (logs). */
  tail?: number;
  /** Local user id (kill-user). */
  userId?: number;
}

/**
 * Field types only: which ids exist and what a user id must be are the handler's business
 * (it answers ERR_CLI_USAGE), so `userId` is any number here.
 */
export const ControlApiRequestSchema: z.ZodType<ControlApiRequest> = z.object({
  cmd: z.enum(['ls', 'inspect', 'logs', 'restart', 'restart-stale', 'kill', 'kill-user']),
  id: z.string().optional(),
  tail: z.number().optional(),
  userId: z.number().optional(),
});

export type ControlApiResponse =
  { ok: true; data?: unknown } | { ok: false; error: { code: string; message: string; status?: number } };

export const ControlApiResponseSchema: z.ZodType<ControlApiResponse> = z.union([
  z.object({ ok: z.literal(true), data: z.unknown().optional() }),
  z.object({
    ok: z.literal(false),
    error: z.object({ code: z.string(), message: z.string(), status: z.number().optional() }),
  }),
]);

/** The data of a `kill-user` reply. */
export const KillUserReplySchema = z.object({ userId: z.number(), killed: z.number() });

export type ControlApiHandler = (req: ControlApiRequest) => Promise<unknown>;

export interface ControlApiServer {
  path: string;
  close(): Promise<void>;
}

export async function startControlApi(
  dataDir: string,
  handler: ControlApiHandler,
  log: Logger,
): Promise<ControlApiServer> {
  const path = join(dataDir, CONTROL_SOCKET_NAME);
  try {
    unlinkSync(path);
  } catch {
    // no stale socket from a previous run
  }
  const server: Server = createServer((sock) => {
    sock.on('error', () => sock.destroy());
    let handled = false;
    const answer = (r: ControlApiResponse) => {
      writeMessage<ControlApiResponse>(sock, r);
      sock.end();
    };
    const reader = readMessages(sock, {
      schema: ControlApiRequestSchema,
      onMessage: (req) => {
        if (handled) return;
        handled = true;
        reader.stop();
        handler(req).then(
          (data) => answer({ ok: true, data }),
          (err) => {
            const e = isAppError(err) ? err : new AppError('ERR_INTERNAL', 'internal error');
            if (!isAppError(err)) log.error({ err }, 'control api failed');
            answer({ ok: false, error: { code: e.code, message: e.message, status: e.status } });
          },
        );
      },
      onReject: (err) => {
        if (handled) return;
        handled = true;
        reader.stop();
        log.warn(protocolLogFields(err, 'control-api'), 'bad control api request');
        answer({ ok: false, error: { code: err.code, message: err.message, status: err.status } });
      },
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

let fallbackLog: Logger | undefined;
/** The CLI's log for protocol rejections: warnings as JSON lines on stderr (stdout carries results). */
function cliLog(): Logger {
  return (fallbackLog ??= createLogger({ level: 'warn', destination: process.stderr, name: 'cli' }));
}

/**
 * Send one request to the running daemon. ERR_DAEMON_NOT_RUNNING when nobody listens. With a
 * `schema`, the reply's data is checked against it (ERR_PROTOCOL_BAD_MESSAGE when it does not
 * match); without one it is returned as `unknown` for the caller to check or print.
 */
export function controlRequest(dataDir: string, req: ControlApiRequest, log?: Logger): Promise<unknown>;
export function controlRequest<T>(
  dataDir: string,
  req: ControlApiRequest,
  log: Logger | undefined,
  schema: z.ZodType<T>,
): Promise<T>;
export function controlRequest<T>(
  dataDir: string,
  req: ControlApiRequest,
  log?: Logger,
  schema?: z.ZodType<T>,
): Promise<unknown> {
  const path = join(dataDir, CONTROL_SOCKET_NAME);
  const rejected = (err: Parameters<typeof protocolLogFields>[0]) => {
    (log ?? cliLog()).warn(protocolLogFields(err, 'control-api'), 'bad control api reply');
    return err;
  };
  return new Promise((resolve, reject) => {
    const sock = createConnection(path);
    sock.setTimeout(CLIENT_TIMEOUT_MS, () => {
      sock.destroy();
      reject(new AppError('ERR_DAEMON_TIMEOUT', 'the daemon did not answer in time'));
    });
    let done = false;
    sock.on('error', (err: NodeJS.ErrnoException) => {
      if (done) return;
      done = true;
      if (err.code === 'ENOENT' || err.code === 'ECONNREFUSED') {
        reject(
          new AppError(
            'ERR_DAEMON_NOT_RUNNING',
            `the airlock daemon is not running (no control socket at ${path}); start it with \`airlock serve\``,
            { cause: err },
          ),
        );
      } else
        reject(
          new AppError('ERR_DAEMON_UNREACHABLE', `cannot reach the daemon: ${err.code ?? err.message}`, { cause: err }),
        );
    });
    readMessages(sock, {
      schema: ControlApiResponseSchema,
      onMessage: (r) => {
        if (done) return;
        done = true;
        sock.end();
        if (!r.ok) return reject(appErrorFromPeer(r.error, r.error.status ?? 500));
        if (!schema) return resolve(r.data);
        const checked = checkMessage(schema, r.data);
        if (checked.ok) resolve(checked.msg);
        else reject(rejected(checked.err));
      },
      onReject: (err) => {
        if (done) return;
        done = true;
        sock.destroy();
        reject(rejected(err));
      },
    });
    sock.on('connect', () => writeMessage<ControlApiRequest>(sock, req));
  });
}
