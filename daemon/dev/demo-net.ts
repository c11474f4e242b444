/**
 * The demo's network helpers: a free port, and the one token URL that routes each grant to the
 * emulator that answers it (daemon/dev/demo.ts).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export async function freePort(host: string): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve, reject) => s.once('error', reject).listen(0, host, resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

/**
 * One token URL for the daemon (AIRLOCK_GOOGLE_TOKEN_URL serves both connected accounts and
 * the directory service account, as Google's does): JWT-bearer assertions go to the directory
 * emulator, every other grant to the OAuth emulator.
 */
export async function startTokenRouter(): Promise<{
  url: string;
  tokenUrl: string;
  route(oauth: string, directory: string): void;
  close(): Promise<void>;
}> {
  let targets = { oauth: '', directory: '' };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const grant = new URLSearchParams(body.toString('utf8')).get('grant_type') ?? '';
      const target = grant === 'urn:ietf:params:oauth:grant-type:jwt-bearer' ? targets.directory : targets.oauth;
      fetch(target, {
        method: req.method,
        headers: { 'content-type': req.headers['content-type'] ?? 'application/x-www-form-urlencoded' },
        body: req.method === 'POST' ? body : undefined,
      })
        .then(async (r) => {
          const text = await r.text();
          res.writeHead(r.status, {
            'content-type': r.headers.get('content-type') ?? 'application/json',
            'cache-control': 'no-store',
          });
          res.end(text);
        })
        .catch(() => {
          res.writeHead(502, { 'content-type': 'application/json' });
          res.end('{"error":"temporarily_unavailable"}');
        });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    tokenUrl: `${url}/token`,
    route(oauth, directory) {
      targets = { oauth, directory };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
