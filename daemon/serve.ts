import { SqliteSessionStore, startWebServer, type WebServer, type WebServices } from '../web/index.js';
import { openBase, type DaemonBase } from './context.js';
import { createMetrics, type Config, type Logger } from '../core/index.js';
import type { SandboxControl } from '../web/index.js';
import { DirectorySyncRunner } from './directory-sync/index.js';
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
  const metrics = createMetrics({ defaultMetrics: true });
  const services: WebServices = { metrics, ...(opts.services ?? {}) };
  // Directory sync runs in the background of this process; jobs left over by a crash are failed first.
  const directorySync = new DirectorySyncRunner({
    ...base,
    sessions,
    get sandboxes() {
      return services.sandboxes as SandboxControl | undefined;
    },
  });
  const interrupted = directorySync.recover();
  if (interrupted) base.log.warn({ jobs: interrupted }, 'directory-sync jobs interrupted by a restart marked failed');
  services.directorySync ??= directorySync;
  const runtime = opts.runtime === false ? undefined : await startRuntime({ ...base, ...(opts.runtime || {}) });
  if (runtime) {
    services.chat ??= runtime.sessions;
    services.sandboxes ??= runtime.sessions;
  }
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
        await Promise.race([directorySync.idle(), new Promise((r) => setTimeout(r, 5_000).unref())]);
        await runtime?.close();
        base.db.close();
      })();
      return closing;
    },
  };
}
