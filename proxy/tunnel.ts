import { connect as netConnect, isIP, type Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { ProxyRefusal } from './errors.js';

const MAX_HEAD_BYTES = 8192;

let tls: Promise<typeof import('node:tls')> | undefined;
/**
 * node:tls, loaded on first use: it costs ~12 ms of CPU to load, on the path of every sandbox
 * start, and only https upstreams need it. An idle pool member's supervisor loads it ahead
 * (supervisor.ts); a cold-started session loads it at its first https request
 * (docs/runtime.md, "Cold start, step by step").
 */
export function loadTls(): Promise<typeof import('node:tls')> {
  // Not `import()`: a supervisor started from its startup snapshot has no module loader behind
  // `import()` in code compiled into the snapshot; a builtin is there all the same.
  return (tls ??= Promise.resolve().then(() => process.getBuiltinModule('node:tls')));
}

/**
 * Open a tunnel to `host:port` through the daemon's egress gateway: HTTP CONNECT over the
 * unix socket, then (for https upstreams) TLS over the tunnel. The proxy has no other way out.
 */
export async function openTunnel(opts: {
  egressSocket: string;
  host: string;
  port: number;
  tls: boolean;
  timeoutMs: number;
  /** Extra trusted CA certificates (PEM) for https upstreams; default: Node's bundled roots. */
  ca?: string | Buffer;
}): Promise<Socket | TLSSocket> {
  const authority = `${opts.host.includes(':') ? `[${opts.host}]` : opts.host}:${opts.port}`;
  const sock = netConnect(opts.egressSocket);
  const timer = setTimeout(() => sock.destroy(new Error('egress connect timeout')), opts.timeoutMs);
  try {
    await new Promise<void>((resolve, reject) => {
      let head = Buffer.alloc(0);
      const onData = (d: Buffer) => {
        head = Buffer.concat([head, d]);
        const end = head.indexOf('\r\n\r\n');
        if (end === -1) {
          if (head.length > MAX_HEAD_BYTES) fail(new Error('egress answer too long'));
          return;
        }
        cleanup();
        const status = /^HTTP\/1\.[01] (\d{3})/.exec(head.subarray(0, end).toString('latin1'));
        if (!status || status[1] !== '200') {
          sock.destroy();
          return reject(new ProxyRefusal('ERR_PROXY_UPSTREAM', `egress refused ${authority} (${status?.[1] ?? 'bad answer'})`));
        }
        const rest = head.subarray(end + 4);
        if (rest.length) sock.unshift(rest);
        resolve();
      };
      const fail = (err: Error) => {
        cleanup();
        sock.destroy();
        reject(new ProxyRefusal('ERR_PROXY_UPSTREAM', `egress unavailable: ${err.message}`));
      };
      const onClose = () => fail(new Error('egress closed the connection'));
      const cleanup = () => {
        sock.off('data', onData);
        sock.off('error', fail);
        sock.off('close', onClose);
      };
      sock.on('data', onData);
      sock.on('error', fail);
      sock.on('close', onClose);
      sock.on('connect', () => sock.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`));
    });
    // Nothing arrives before the request is written (the upstream speaks second), so the
    // socket can be handed to the HTTP client as it is.
    if (!opts.tls) return sock;
    // Certificate checks stay on (hostname against the route's upstream host).
    const { connect: tlsConnect } = await loadTls();
    const secure = tlsConnect({
      socket: sock,
      host: opts.host,
      servername: isIP(opts.host) ? undefined : opts.host,
      ALPNProtocols: ['http/1.1'],
      ...(opts.ca ? { ca: opts.ca } : {}),
    });
    await new Promise<void>((resolve, reject) => {
      secure.once('secureConnect', resolve);
      secure.once('error', (err) => reject(new ProxyRefusal('ERR_PROXY_UPSTREAM', `TLS to upstream failed: ${err.message}`)));
    });
    return secure;
  } finally {
    clearTimeout(timer);
  }
}
