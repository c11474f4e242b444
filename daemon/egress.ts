import { createServer, connect as netConnect, type Server, type Socket } from 'node:net';
import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import type { EgressGateway, EgressHandle, Logger, Metrics } from '../core/index.js';

const MAX_HEAD_BYTES = 8192;
const HEAD_TIMEOUT_MS = 10_000;
const CONNECT_TIMEOUT_MS = 10_000;

/** `https://sheets.googleapis.com/x` → `sheets.googleapis.com:443`; the form the allow-list uses. */
export function egressTarget(url: string): string {
  const u = new URL(url);
  const port = u.port || (u.protocol === 'https:' ? '443' : '80');
  return `${u.hostname.toLowerCase()}:${port}`;
}

/** Parse `host:port` / `[v6]:port` into its parts, or undefined when malformed. */
function parseAuthority(a: string): { host: string; port: number; key: string } | undefined {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(a);
  if (!m) return undefined;
  const port = Number(m[3]);
  if (port < 1 || port > 65535) return undefined;
  const host = (m[1] ?? m[2]).toLowerCase();
  return { host, port, key: `${m[1] ? `[${host}]` : host}:${port}` };
}

/**
 * The daemon's egress gateway: one unix socket per session (mode 0600, root only in the
 * container), accepting `CONNECT host:port` only to the host:port pairs of that session's
 * route upstreams; the daemon then opens the TCP connection itself and splices bytes.
 * Anything else (other methods, other targets, malformed heads) is refused with 403/400
 * and logged with the session id.
 */
export class EgressGatewayService implements EgressGateway {
  readonly #log: Logger;
  readonly #handles = new Set<EgressHandle>();

  readonly #metrics?: Metrics;

  constructor(opts: { log: Logger; metrics?: Metrics }) {
    this.#log = opts.log;
    this.#metrics = opts.metrics;
  }

  async open(sessionId: string, socketPath: string, allow: string[]): Promise<EgressHandle> {
    const log = this.#log.child({ sessionId, area: 'egress' });
    let allowed = new Set(allow.map((a) => parseAuthority(a)?.key).filter((k): k is string => !!k));
    const sockets = new Set<Socket>();
    const server: Server = createServer((client) => {
      sockets.add(client);
      client.on('close', () => sockets.delete(client));
      handle(client);
    });

    const refuse = (client: Socket, status: 400 | 403 | 502, code: string, target: string | undefined) => {
      log.warn({ target, status, code }, 'egress refused');
      this.#metrics?.proxyDecisions.inc({ route: 'egress', outcome: status === 502 ? 'upstream_error' : 'refused' });
      const reason = status === 403 ? 'Forbidden' : status === 400 ? 'Bad Request' : 'Bad Gateway';
      client.end(`HTTP/1.1 ${status} ${reason}\r\nx-airlock-error: ${code}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`);
    };

    const handle = (client: Socket) => {
      let head = Buffer.alloc(0);
      client.on('error', () => client.destroy());
      const timer = setTimeout(() => client.destroy(), HEAD_TIMEOUT_MS);
      const onData = (d: Buffer) => {
        head = Buffer.concat([head, d]);
        const end = head.indexOf('\r\n\r\n');
        if (end === -1) {
          if (head.length > MAX_HEAD_BYTES) {
            client.off('data', onData);
            clearTimeout(timer);
            refuse(client, 400, 'ERR_EGRESS_BAD_REQUEST', undefined);
          }
          return;
        }
        client.off('data', onData);
        clearTimeout(timer);
        client.pause();
        const line = head.subarray(0, head.indexOf('\r\n')).toString('latin1');
        const m = /^([A-Z]+) (\S+) HTTP\/1\.[01]$/.exec(line);
        if (!m) return refuse(client, 400, 'ERR_EGRESS_BAD_REQUEST', undefined);
        const target = m[2].slice(0, 300);
        if (m[1] !== 'CONNECT') return refuse(client, 403, 'ERR_EGRESS_DENIED', target);
        const a = parseAuthority(target);
        if (!a || !allowed.has(a.key)) return refuse(client, 403, 'ERR_EGRESS_DENIED', target);
        this.#metrics?.proxyDecisions.inc({ route: 'egress', outcome: 'allowed' });
        // noDelay: a tunnel carries small request/response writes; Nagle + delayed ACK would add ~40 ms each.
        const upstream = netConnect({ host: a.host, port: a.port, noDelay: true });
        sockets.add(upstream);
        const started = Date.now();
        let up = 0;
        let down = 0;
        const ctimer = setTimeout(() => upstream.destroy(new Error('connect timeout')), CONNECT_TIMEOUT_MS);
        let connected = false;
        upstream.once('connect', () => {
          connected = true;
          clearTimeout(ctimer);
          client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
          const rest = head.subarray(end + 4);
          if (rest.length) upstream.write(rest);
          client.on('data', (b: Buffer) => (up += b.length));
          upstream.on('data', (b: Buffer) => (down += b.length));
          client.pipe(upstream);
          upstream.pipe(client);
          client.resume();
        });
        upstream.on('error', (err: NodeJS.ErrnoException) => {
          clearTimeout(ctimer);
          if (!client.destroyed && !connected) {
            refuse(client, 502, 'ERR_EGRESS_UPSTREAM', target);
          } else client.destroy();
          log.warn({ target, err: err.code ?? err.message }, 'egress upstream error');
        });
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => {
          sockets.delete(upstream);
          client.destroy();
          log.info({ target, bytes_out: up, bytes_in: down, ms: Date.now() - started }, 'egress tunnel closed');
        });
      };
      client.on('data', onData);
    };

    mkdirSync(dirname(socketPath), { recursive: true });
    rmSync(socketPath, { force: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, () => {
        server.off('error', reject);
        resolve();
      });
    });
    // Root-only: the agent child (uid 1001) must not reach the outside even through here.
    chmodSync(socketPath, 0o600);
    log.info({ allow: [...allowed] }, 'egress socket open');

    let closing: Promise<void> | undefined;
    const h: EgressHandle = {
      update: (next: string[]) => {
        allowed = new Set(next.map((x) => parseAuthority(x)?.key).filter((k): k is string => !!k));
        log.info({ allow: [...allowed] }, 'egress allow-list updated');
      },
      close: () =>
        (closing ??= new Promise<void>((resolve) => {
          this.#handles.delete(h);
          for (const s of sockets) s.destroy();
          server.close(() => {
            rmSync(socketPath, { force: true });
            resolve();
          });
        })),
    };
    this.#handles.add(h);
    return h;
  }

  /** Close every open session socket. */
  async close(): Promise<void> {
    await Promise.all([...this.#handles].map((h) => h.close()));
  }
}
