/**
 * Credential-injection reverse proxy (runs inside the sandbox, started by the supervisor).
 *
 * PLACEHOLDER until the proxy issue lands: it serves no routes and refuses everything
 * with 403 ERR_PROXY_ROUTE_DENIED. The signature is the contract the supervisor uses.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SessionProfile } from '../core/sandbox-protocol.js';

export interface ProxyOptions {
  profile: SessionProfile;
  /** Resolve a token reference's env name (e.g. 'MAIL_ACCESS_TOKEN') to its current value; read per request so rotation applies. */
  getToken(envName: string): string | undefined;
  /** Resolve a placeholder env name (e.g. 'MAIL_API_KEY') to this session's placeholder value. */
  getPlaceholder(envName: string): string | undefined;
  /** Unix socket of the daemon's egress gateway (HTTP CONNECT). */
  egressSocket: string;
  host?: string;
  port?: number;
  /** Structured log sink (no tokens, bodies or query values are ever passed). */
  log?: (level: 'info' | 'warn' | 'error', msg: string, data?: Record<string, unknown>) => void;
}

export interface RunningProxy {
  port: number;
  close(): Promise<void>;
}

export async function startCredentialProxy(opts: ProxyOptions): Promise<RunningProxy> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(403, { 'content-type': 'application/json', 'x-airlock-error': 'ERR_PROXY_ROUTE_DENIED' });
    res.end(JSON.stringify({ error: { code: 'ERR_PROXY_ROUTE_DENIED', message: 'no routes' } }));
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', resolve));
  let closing: Promise<void> | undefined;
  return {
    port: (server.address() as AddressInfo).port,
    close: () => (closing ??= new Promise((resolve) => server.close(() => resolve()))),
  };
}
