/** The model SDKs' fetch (agent/models/http-fetch.ts) against a real HTTP server on 127.0.0.1. */
import t from 'tap';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { httpFetch, httpFetchWith } from '../../agent/models/http-fetch.js';

type Seen = { method?: string; url?: string; headers: IncomingMessage['headers']; body: string };

async function server(handle: (req: IncomingMessage, res: ServerResponse, seen: Seen) => void) {
  const seen: Seen[] = [];
  const s = createServer((req, res) => {
    const one: Seen = { method: req.method, url: req.url, headers: req.headers, body: '' };
    seen.push(one);
    req.setEncoding('utf8');
    req.on('data', (d: string) => (one.body += d));
    req.on('end', () => handle(req, res, one));
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  return { url, seen, close: () => new Promise<void>((r) => (s.closeAllConnections(), s.close(() => r()))) };
}

t.test(
  'a POST: method, path and query, headers and body go out; status, headers and a streamed body come back',
  async (t) => {
    const srv = await server((_req, res) => {
      res.writeHead(201, 'Made', { 'content-type': 'text/event-stream', 'x-two': ['a', 'b'] });
      res.write('data: one\n\n');
      setTimeout(() => res.end('data: two\n\n'), 20);
    });
    t.teardown(srv.close);
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'héllo' }] });
    const res = await httpFetch(`${srv.url}/v1/chat/completions?x=1`, {
      method: 'post',
      headers: new Headers({ authorization: 'Bearer ph', 'content-type': 'application/json' }),
      body,
    });
    t.equal(res.status, 201);
    t.equal(res.statusText, 'Made');
    t.equal(res.headers.get('content-type'), 'text/event-stream');
    t.equal(res.headers.get('x-two'), 'a, b', 'a repeated header keeps both values');
    const reader = res.body!.getReader();
    const first = await reader.read();
    t.equal(new TextDecoder().decode(first.value), 'data: one\n\n', 'the first piece arrives before the answer ends');
    let rest = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += new TextDecoder().decode(r.value);
    t.equal(rest, 'data: two\n\n');
    const [seen] = srv.seen;
    t.equal(seen.method, 'POST', 'the method upper-cased');
    t.equal(seen.url, '/v1/chat/completions?x=1');
    t.equal(seen.headers.authorization, 'Bearer ph');
    t.equal(seen.headers['content-length'], String(Buffer.byteLength(body)), 'the length of the UTF-8 bytes');
    t.equal(seen.body, body);
  },
);

t.test('keep-alive: the next call reuses the connection', async (t) => {
  const ports = new Set<number>();
  const srv = await server((req, res) => {
    ports.add(req.socket.remotePort!);
    res.end('ok');
  });
  t.teardown(srv.close);
  for (let i = 0; i < 3; i++) t.equal(await (await httpFetch(`${srv.url}/x`)).text(), 'ok');
  t.equal(ports.size, 1, 'three calls, one connection');
});

t.test('a status without a body (204): a null body', async (t) => {
  const srv = await server((_req, res) => {
    res.writeHead(204);
    res.end();
  });
  t.teardown(srv.close);
  const res = await httpFetch(`${srv.url}/none`, { method: 'DELETE' });
  t.equal(res.status, 204);
  t.equal(res.body, null);
});

t.test(
  'an abort: before the answer rejects with an AbortError; during the body errors the body with one',
  async (t) => {
    const srv = await server((req, res) => {
      if (req.url === '/slow-head') return; // never answers
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n'); // and never ends
    });
    t.teardown(srv.close);
    const early = new AbortController();
    const pending = httpFetch(`${srv.url}/slow-head`, { signal: early.signal });
    setTimeout(() => early.abort(), 20);
    await t.rejects(pending, { name: 'AbortError' }, 'no answer yet: the call rejects');

    const late = new AbortController();
    const res = await httpFetch(`${srv.url}/stream`, { signal: late.signal });
    const reader = res.body!.getReader();
    await reader.read();
    late.abort();
    await t.rejects(reader.read(), { name: 'AbortError' }, 'mid-body: the next read fails with an AbortError');
  },
);

t.test('a refused connection rejects (the SDK reports a connection error)', async (t) => {
  const srv = await server((_req, res) => res.end());
  const url = srv.url;
  await srv.close();
  await t.rejects(httpFetch(`${url}/gone`), { code: 'ECONNREFUSED' });
});

t.test('what it does not handle goes to the global fetch: a stream body', async (t) => {
  const srv = await server((_req, res) => res.end('fine'));
  t.teardown(srv.close);
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(new TextEncoder().encode('streamed'));
      c.close();
    },
  });
  const res = await httpFetch(`${srv.url}/up`, { method: 'POST', body, duplex: 'half' } as RequestInit);
  t.equal(await res.text(), 'fine');
  t.equal(srv.seen[0].body, 'streamed');
});

/**
 * The connect timeout (httpFetchWith): a listener whose process is stopped (SIGSTOP) accepts
 * nothing; once its accept queue (backlog 1) is full the kernel drops new SYNs, so a connect
 * hangs, as to a host that does not answer. The request fails with ECONNECTTIMEOUT, which
 * agent/models/sdk.ts retries like a refused connection.
 */
t.test('a connection not made within connectTimeoutMs fails with ECONNECTTIMEOUT', async (t) => {
  const { spawn } = await import('node:child_process');
  const { connect } = await import('node:net');
  const child = spawn(
    process.execPath,
    [
      '-e',
      "const s=require('net').createServer().listen({port:0,host:'127.0.0.1',backlog:1},()=>console.log(s.address().port))",
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  t.teardown(() => child.kill('SIGKILL'));
  const port = await new Promise<number>((resolve) =>
    child.stdout.once('data', (d: Buffer) => resolve(Number(String(d).trim()))),
  );
  process.kill(child.pid!, 'SIGSTOP');
  // Fill the accept queue; these connections complete in the kernel and are never accepted.
  const fillers = Array.from({ length: 4 }, () => connect({ port, host: '127.0.0.1' }).on('error', () => undefined));
  t.teardown(() => fillers.forEach((s) => s.destroy()));
  const fetchSlowConnect = httpFetchWith({ connectTimeoutMs: 300 });
  const err = await fetchSlowConnect(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: 'POST',
    body: '{}',
  }).catch((e: unknown) => e);
  t.match(err, { code: 'ECONNECTTIMEOUT', message: /no connection within/ });
});
