/**
 * A hostile client for the credential proxy and the egress socket. Imports node: modules only,
 * so its compiled file runs on its own inside a sandbox (copied in as .mjs, run as the child's
 * uid): `node hostile-client.mjs <cases.json>` prints one JSON result per case, in order.
 * Tests on the host import `runCase` directly.
 */
import { connect, type Socket } from 'node:net';
import { readFileSync } from 'node:fs';

export type HostileCase =
  /** Raw bytes to the proxy's TCP port. */
  | { id: string; kind: 'raw'; data: string; timeoutMs?: number }
  /** Raw bytes to a unix socket (the egress or control socket). */
  | { id: string; kind: 'unix'; path: string; data: string; timeoutMs?: number }
  /** `count` requests that send their head (asking `Expect: 100-continue`) and part of the body, then stall; while they hang, `data` must be answered. */
  | { id: string; kind: 'stall'; count: number; stalled: string; data: string; timeoutMs?: number };

export interface HostileResult {
  id: string;
  /** HTTP status of the answer, 0 when none came. */
  status: number;
  /** The x-airlock-error code of the answer, if any. */
  code: string | null;
  /** A connection error (EACCES, ECONNREFUSED, …), if the connection itself failed. */
  error: string | null;
  ms: number;
}

function exchange(
  target: { port: number; host: string } | { path: string },
  data: string,
  timeoutMs: number,
): Promise<{ text: string; error: string | null }> {
  return new Promise((resolve) => {
    const sock = 'path' in target ? connect(target.path) : connect(target.port, target.host);
    const chunks: Buffer[] = [];
    let error: string | null = null;
    let settled = false;
    const done = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      resolve({ text: Buffer.concat(chunks).toString('latin1'), error });
    };
    const timer = setTimeout(done, timeoutMs);
    sock.on('data', (d: Buffer) => {
      chunks.push(d);
      // One full answer with a body length is enough (keep-alive answers would otherwise wait for the timeout).
      const text = Buffer.concat(chunks).toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      const cl = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end));
      if (end !== -1 && cl && text.length >= end + 4 + Number(cl[1])) done();
    });
    sock.on('error', (e: NodeJS.ErrnoException) => {
      error = e.code ?? 'error';
      done();
    });
    sock.on('close', done);
    sock.on('connect', () => sock.write(Buffer.from(data, 'latin1')));
  });
}

function result(id: string, text: string, error: string | null, started: number): HostileResult {
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
  const code = /\r\nx-airlock-error: *([A-Z_]+)/i.exec(text);
  return { id, status: m ? Number(m[1]) : 0, code: code ? code[1] : null, error, ms: Date.now() - started };
}

/** Run one case against the proxy at 127.0.0.1:`port`. */
export async function runCase(port: number, c: HostileCase): Promise<HostileResult> {
  const started = Date.now();
  const timeoutMs = c.timeoutMs ?? 3000;
  if (c.kind === 'raw') {
    const r = await exchange({ port, host: '127.0.0.1' }, c.data, timeoutMs);
    return result(c.id, r.text, r.error, started);
  }
  if (c.kind === 'unix') {
    const r = await exchange({ path: c.path }, c.data, timeoutMs);
    return result(c.id, r.text, r.error, started);
  }
  // Stall: open `count` connections that never finish their body, then send the legit request.
  const held = await Promise.all(Array.from({ length: c.count }, () => stall(port, c.stalled, timeoutMs)));
  // Every stalled head was answered "100 Continue": the proxy admitted it and is reading its body.
  const unread = held.filter((h) => !h.continued).length;
  const legitStarted = Date.now();
  const r = unread
    ? { text: '', error: `${unread} stalled heads got no 100 Continue` }
    : await exchange({ port, host: '127.0.0.1' }, c.data, timeoutMs);
  for (const h of held) h.sock.destroy();
  return result(c.id, r.text, r.error, legitStarted);
}

/**
 * One stalled request (its head asks `Expect: 100-continue`, its body stops short): resolves once
 * the proxy answered "100 Continue" (it sends that only after admitting the head), or with
 * `continued: false` on an error, a close or at `timeoutMs`.
 */
function stall(port: number, stalled: string, timeoutMs: number): Promise<{ sock: Socket; continued: boolean }> {
  return new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1', () => sock.write(Buffer.from(stalled, 'latin1')));
    const settle = (continued: boolean) => {
      clearTimeout(timer);
      resolve({ sock, continued });
    };
    const timer = setTimeout(settle, timeoutMs, false);
    sock.once('data', (d: Buffer) => settle(/^HTTP\/1\.1 100 /.test(d.toString('latin1'))));
    sock.on('error', () => settle(false));
    sock.on('close', () => settle(false));
  });
}

// Run as a script: cases from the file named on the command line, port from HOSTILE_PROXY_PORT.
if (process.argv[1] && /hostile-client\.(m?js)$/.test(process.argv[1]) && process.argv[2]) {
  const cases = JSON.parse(readFileSync(process.argv[2], 'utf8')) as HostileCase[];
  const port = Number(process.env.HOSTILE_PROXY_PORT);
  const out: HostileResult[] = [];
  for (const c of cases) out.push(await runCase(port, c));
  process.stdout.write(JSON.stringify(out));
}
