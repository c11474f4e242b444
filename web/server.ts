import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
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

/**
 * Create the app and listen on config.host:config.port (0 = any free port): https when
 * AIRLOCK_TLS_CERT_FILE and AIRLOCK_TLS_KEY_FILE are set (e.g. for https between nodes), else http.
 */
export async function startWebServer(
  ctx: WebContext,
  port = ctx.config.port,
  host = ctx.config.host,
): Promise<WebServer> {
  const app = createApp(ctx);
  const tls = ctx.config.tls;
  const server: Server = tls
    ? createHttpsServer({ cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) }, app)
    : createServer(app);
  server.keepAliveTimeout = 5_000;
  // The one upgrade served: `sessions attach` from another node of the fleet (web/fleet-attach.ts).
  const attach = fleetAttach(ctx);
  server.on('upgrade', attach.onUpgrade);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const h = addr.address.includes(':') ? `[${addr.address}]` : addr.address;
  let closing: Promise<void> | undefined;
  return {
    url: `${tls ? 'https' : 'http'}://${h}:${addr.port}`,
    port: addr.port,
    app,
    server,
    close(graceMs = 5_000) {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        attach.close();
        setTimeout(() => server.closeAllConnections(), graceMs).unref();
      });
      return closing;
    },
  };
}
