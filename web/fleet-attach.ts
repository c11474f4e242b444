import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { PassThrough, Writable } from 'node:stream';
import {
  AppError,
  ATTACH_UPGRADE,
  AttachFrameReader,
  encodeAttachFrame,
  isAppError,
  NODE_HEADERS,
  protocolLogFields,
} from '../core/index.js';
import { listNodes } from '../domain/fleet.js';
import { nodeVerifier } from './fleet.js';
import { strictInt } from './query-params.js';
import type { WebContext } from './context.js';

/**
 * `airlock sessions attach` run on one node for a session another node owns (docs/deploy.md):
 * the CLI sends `GET /api/fleet/sessions/<id>/attach?root=0|1&term=…&rows=…&cols=…` with
 * `Upgrade: airlock-attach`, signed with AIRLOCK_NODE_SECRET like every request between nodes, to
 * the owner's internal URL. The owner checks the signature and the sending node, finds the
 * session's container, answers 101 and runs the same TTY shell a local attach runs; from then on
 * both sides speak attach frames (core/attach-frames.ts). Anything refused is an HTTP answer with
 * the usual error body, before any shell starts.
 */

/** What the runtime gives the web app for attach: the session's container, and a shell in it (web/ports.ts). */
export type { AttachPort } from './ports.js';

const ATTACH_PATH = /^\/api\/fleet\/sessions\/([^/?]+)\/attach$/;
const TERM_RE = /^[A-Za-z0-9._+-]{1,64}$/;

function refuse(socket: Duplex, err: AppError): void {
  const body = JSON.stringify({ error: { code: err.code, message: err.message } });
  socket.end(
    `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status] ?? ''}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

type AttachLog = Pick<WebContext['log'], 'info' | 'warn' | 'error'>;

/** An attach the owner admitted: the session's container and the shell's settings. */
interface AdmittedAttach {
  containerId: string;
  sessionId: string;
  from: string;
  root: boolean;
  term: string;
  rows: number;
  cols: number;
}

/** `rows` / `cols`: absent is 0, else exactly one integer from 0 to 65535. */
function sizeParam(url: URL, k: string): number {
  const all = url.searchParams.getAll(k);
  if (all.length === 0) return 0;
  const n = all.length === 1 ? strictInt(all[0], 0, 0xffff) : undefined;
  if (n === undefined) throw new AppError('ERR_VALIDATION', `${k}: one integer from 0 to 65535`);
  return n;
}

/** Checks the upgrade, its node signature and sender, and its parameters; finds the session's container. */
async function admitAttach(
  ctx: WebContext,
  verifier: ReturnType<typeof nodeVerifier>,
  log: AttachLog,
  req: IncomingMessage,
): Promise<AdmittedAttach> {
  const url = new URL(req.url ?? '/', 'http://node');
  const m = ATTACH_PATH.exec(url.pathname);
  if (!m || req.method !== 'GET' || String(req.headers.upgrade).toLowerCase() !== ATTACH_UPGRADE) {
    throw new AppError('ERR_NOT_FOUND', 'no upgrade is served here but a signed airlock-attach from another node');
  }
  const authFailed = (reason: string, node?: string) => {
    log.warn(
      { event: 'node_auth_refused', reason, node, method: req.method, path: url.pathname },
      'inter-node request refused',
    );
    return new AppError('ERR_NODE_AUTH', 'not a valid request from a node of this fleet');
  };
  if (!verifier) throw authFailed('no_secret');
  const v = await verifier.verify(req.headers, { method: 'GET', path: req.url ?? '', body: '' });
  const claimed =
    typeof req.headers[NODE_HEADERS.node] === 'string' ? (req.headers[NODE_HEADERS.node] as string) : undefined;
  if (!v.ok) throw authFailed(v.reason, claimed);
  const nodes = await listNodes(ctx.database.sql, ctx.config.node.lostS);
  if (!nodes.some((n) => n.id === v.node && n.id !== ctx.config.node.id)) throw authFailed('unknown_node', v.node);
  const term = url.searchParams.get('term') ?? 'xterm';
  if (!TERM_RE.test(term)) throw new AppError('ERR_VALIDATION', 'term: letters, digits and ._+- only (1 to 64)');
  const rows = sizeParam(url, 'rows');
  const cols = sizeParam(url, 'cols');
  const port = ctx.services.attach;
  const sessionId = decodeURIComponent(m[1]);
  return {
    containerId: await port.container(sessionId),
    sessionId,
    from: v.node,
    root: url.searchParams.get('root') === '1',
    term,
    rows,
    cols,
  };
}

/** Answers 101 and runs the shell, speaking attach frames on the socket until either side ends. */
function runAttach(
  ctx: WebContext,
  log: AttachLog,
  open: Set<Duplex>,
  socket: Duplex,
  head: Buffer,
  a: AdmittedAttach,
): void {
  open.add(socket);
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: ${ATTACH_UPGRADE}\r\nConnection: Upgrade\r\n\r\n`);
  const started = Date.now();
  log.info({ session: a.sessionId, fromNode: a.from, root: a.root }, 'attach from another node');
  // The shell's terminal: keys from `d` frames, its size from `r` frames, the screen out as `d` frames.
  const stdin = new PassThrough();
  const stdout = Object.assign(
    new Writable({
      write(chunk: Buffer, _enc, cb) {
        if (!socket.writable) return cb();
        socket.write(encodeAttachFrame({ type: 'data', data: chunk }), () => cb());
      },
    }),
    { rows: a.rows || 24, columns: a.cols || 80 },
  );
  const reader = new AttachFrameReader();
  const onData = (chunk: Buffer) => {
    let frames;
    try {
      frames = reader.push(chunk);
    } catch (err) {
      log.warn(
        isAppError(err) ? protocolLogFields(err, 'fleet-attach') : { channel: 'fleet-attach' },
        'bad attach frame: connection closed',
      );
      socket.destroy();
      return;
    }
    for (const f of frames) {
      if (f.type === 'data') stdin.write(f.data);
      else if (f.type === 'eof') stdin.end();
      else if (f.type === 'resize') {
        if (f.rows) stdout.rows = f.rows;
        if (f.cols) stdout.columns = f.cols;
        stdout.emit('resize');
      }
    }
  };
  socket.on('data', onData);
  // The CLI went away: its shell's input ends, as when a local terminal closes.
  socket.on('close', () => {
    open.delete(socket);
    stdin.end();
  });
  socket.on('error', () => socket.destroy());
  if (head.length) onData(head);
  ctx.services.attach.shell(a.containerId, { root: a.root, term: a.term }, { stdin, stdout }).then(
    (code) => {
      log.info({ session: a.sessionId, fromNode: a.from, code, ms: Date.now() - started }, 'attach ended');
      if (socket.writable) socket.end(encodeAttachFrame({ type: 'exit', code }));
    },
    (err: unknown) => {
      log.warn({ session: a.sessionId, err: (err as Error).message }, 'attach failed');
      if (socket.writable) socket.end(encodeAttachFrame({ type: 'exit', code: 1 }));
    },
  );
}

/** The listener for the web server's `upgrade` event; `close()` ends every attach still open. */
export function fleetAttach(ctx: WebContext): {
  onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  close(): void;
} {
  const verifier = nodeVerifier(ctx);
  const open = new Set<Duplex>();
  const log = ctx.log.child({ area: 'fleet-attach' });
  return {
    onUpgrade(req, socket, head) {
      socket.on('error', () => socket.destroy());
      admitAttach(ctx, verifier, log, req).then(
        (a) => runAttach(ctx, log, open, socket, head, a),
        (err: unknown) =>
          refuse(
            socket,
            isAppError(err)
              ? err
              : (log.error({ err }, 'attach failed'), new AppError('ERR_INTERNAL', 'internal error')),
          ),
      );
    },
    close() {
      for (const s of open) s.destroy();
    },
  };
}
