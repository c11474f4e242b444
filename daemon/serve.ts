import { SqliteSessionStore, startWebServer, type WebServer, type WebServices } from '../web/index.js';
import { openBase, type DaemonBase } from './context.js';
import { createMetrics, type Config, type Logger } from '../core/index.js';
import type { SandboxControl } from '../web/index.js';
import { DirectorySyncRunner } from './directory-sync/index.js';

export interface RunningDaemon extends DaemonBase {
  web: WebServer;
  /** Shutdown in order: stop accepting, drain streams, stop sessions, close servers, close the db. */
  close(): Promise<void>;
}

export interface ServeOptions {
  log?: Logger;
  /** Extra services (tests, demo) merged over the ones serve builds. */
  services?: WebServices;
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
  const web = await startWebServer({ ...base, sessions, services });
  base.log.info({ url: web.url, publicOrigin: config.publicOrigin }, 'airlock listening');
  const pruneTimer = setInterval(() => sessions.prune(), 3600_000);
  pruneTimer.unref();
  let closing: Promise<void> | undefined;
  return {
    ...base,
    web,
    close() {
      closing ??= (async () => {
        clearInterval(pruneTimer);
        await web.close();
        await Promise.race([directorySync.idle(), new Promise((r) => setTimeout(r, 5_000).unref())]);
        base.db.close();
      })();
      return closing;
    },
  };
}
