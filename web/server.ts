import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import { createApp } from './app.js';
import { fleetAttach } from './fleet-attach.js';
import type { WebContext } from './context.js';

export interface WebServer {
  url: string;
  port: number;
  app: Express;
  server: Server;
  /** Stop accepting, let open requests finish (up to graceMs), then close. Idempotent. */
  close(graceMs?: number): Promise<void>;
}

/** A listener bound before the app exists: its port is known, and it answers "starting" until `serve`. */
export interface WebListener {
  url: string;
  port: number;
  /** Make the app and answer with it from now on (the fleet's attach upgrade too). */
  serve(ctx: WebContext): WebServer;
  /** Close the listener (idempotent; the served app's `close` drains first). */
  close(graceMs?: number): Promise<void>;
}

/**
 * Listen on config.host:config.port (0 = any free port): https when AIRLOCK_TLS_CERT_FILE and
 * AIRLOCK_TLS_KEY_FILE are set (e.g. for https between nodes), else http. Until `serve` every
 * request answers 503 ERR_STARTING with Retry-After: 1 (daemon/serve.ts binds the port first:
 * the sessions' host route needs it before the runtime starts).
 */
export async function openWebListener(
  ctx: Pick<WebContext, 'config'>,
  port = ctx.config.port,
  host = ctx.config.host,
): Promise<WebListener> {
  const tls = ctx.config.tls;
  const starting = (_req: IncomingMessage, res: ServerResponse) => {
    const body = { error: { code: 'ERR_STARTING', message: 'the server is starting; try again in a moment' } };
    res.writeHead(503, { 'Content-Type': 'application/json', 'Retry-After': '1', Connection: 'close' });
    res.end(JSON.stringify(body));
  };
  const server: Server = tls
    ? createHttpsServer({ cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) }, starting)
    : createServer(starting);
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const h = addr.address.includes(':') ? `[${addr.address}]` : addr.address;
  const url = `${tls ? 'https' : 'http'}://${h}:${addr.port}`;
  let closing: Promise<void> | undefined;
  let attachClose = () => {};
  const close = (graceMs = 5_000) =>
    (closing ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
      attachClose();
      setTimeout(() => server.closeAllConnections(), graceMs).unref();
    }));
  return {
    url,
    port: addr.port,
    close,
    serve(full: WebContext): WebServer {
      const app = createApp(full);
      // The one upgrade served: `sessions attach` from another node of the fleet (web/fleet-attach.ts).
      const attach = fleetAttach(full);
      attachClose = () => attach.close();
      server.on('upgrade', attach.onUpgrade);
      server.off('request', starting);
      server.on('request', app);
      return { url, port: addr.port, app, server, close };
    },
  };
}

/** Listen and serve at once (tests, benches): openWebListener, then its `serve`. */
export async function startWebServer(
  ctx: WebContext,
  port = ctx.config.port,
  host = ctx.config.host,
): Promise<WebServer> {
  return (await openWebListener(ctx, port, host)).serve(ctx);
}
