import { SqliteSessionStore, startWebServer, type WebServer, type WebServices } from '../web/index.js';
import { openBase, type DaemonBase } from './context.js';
import type { Config, Logger } from '../core/index.js';
import type { EgressGateway, SessionPreparer } from '../core/sandbox-protocol.js';
import { startRuntime, type Runtime } from './runtime/index.js';

export interface RunningDaemon extends DaemonBase {
  web: WebServer;
  /** Session manager + operator control socket; undefined when the engine was unreachable. */
  runtime?: Runtime;
  /** Shutdown in order: stop accepting, drain streams, stop sessions, close servers, close the db. */
  close(): Promise<void>;
}

export interface ServeOptions {
  log?: Logger;
  /** Extra services (tests, demo) merged over the ones serve builds. */
  services?: WebServices;
  /** Sandbox runtime seams (other areas plug in here); false disables the runtime (web-only tests). */
  runtime?: { preparer?: SessionPreparer; egress?: EgressGateway; owner?: string } | false;
}

/** Start the daemon: database, services, web app. */
export async function serve(config: Readonly<Config>, opts: ServeOptions = {}): Promise<RunningDaemon> {
  const base = await openBase(config, opts.log);
  const sessions = new SqliteSessionStore(base.db);
  const runtime = opts.runtime === false ? undefined : await startRuntime({ ...base, ...(opts.runtime || {}) });
  const services: WebServices = { ...(runtime ? { chat: runtime.sessions } : {}), ...(opts.services ?? {}) };
  const web = await startWebServer({ ...base, sessions, services });
  base.log.info({ url: web.url, publicOrigin: config.publicOrigin }, 'airlock listening');
  const pruneTimer = setInterval(() => sessions.prune(), 3600_000);
  pruneTimer.unref();
  let closing: Promise<void> | undefined;
  return {
    ...base,
    web,
    runtime,
    close() {
      closing ??= (async () => {
        clearInterval(pruneTimer);
        await web.close();
        await runtime?.close();
        base.db.close();
      })();
      return closing;
    },
  };
}
