import type { Clock, Config, Logger, Metrics } from '../../core/index.js';
import type { EgressGateway, SandboxAuditor, SessionPreparer } from '../../core/sandbox-protocol.js';
import { startControlApi, type ControlApiServer } from './control-api.js';
import { createDocker } from './docker.js';
import { SessionManager, type SessionHooks } from './session-manager.js';
import { DockerDriver } from './docker-driver.js';
import type { SandboxDriver } from './sandbox-driver.js';
import { requireRuntime, type EngineRuntimes } from './sandbox-runtime.js';

export * from './session-manager.js';
export * from './sandbox-driver.js';
export { DockerDriver } from './docker-driver.js';
export { decideAdoption, type AdoptionDecision, type AdoptionFacts } from './adoption.js';
export { parseOperatorRequest, type OperatorRequest } from './operator.js';
export * from './sandbox-client.js';
export * from './control-api.js';
export * from './image.js';
export * from './docker.js';
export * from './sandbox-runtime.js';

export interface Runtime {
  sessions: SessionManager;
  /** The engine the sessions run on (logs and attach go to it directly). */
  driver: SandboxDriver;
  control: ControlApiServer;
  /** Stop sessions (containers keep running for adoption unless removeContainers), then the control socket. */
  close(opts?: { removeContainers?: boolean }): Promise<void>;
}

export interface StartRuntimeOptions {
  config: Readonly<Config>;
  log: Logger;
  preparer?: SessionPreparer;
  egress?: EgressGateway;
  owner?: string;
  childUid?: number;
  metrics?: Metrics;
  /** Session lifecycle hooks (serve wires token rotation track/untrack). */
  hooks?: SessionHooks;
  /** The audit trail and held mail sends (domain/mail/gate.ts). */
  auditor?: SandboxAuditor;
  /** The clock every session age is read on (core/clock.ts); the real one by default. */
  clock?: Clock;
}

/**
 * Start the session manager (adopting containers) and the operator control socket. Returns
 * undefined, with an error logged, when the Docker engine cannot be reached: the web app still
 * serves, and chat answers 503 until the daemon is restarted with an engine.
 */
export async function startRuntime(o: StartRuntimeOptions): Promise<Runtime | undefined> {
  const docker = createDocker(o.config);
  try {
    await docker.ping();
  } catch (err) {
    o.log.error(
      { socket: o.config.docker.socketPath, err: (err as Error).message },
      'docker engine unreachable: sandbox runtime disabled',
    );
    return undefined;
  }
  // A configured runtime the engine lacks is a configuration error: refuse to start (ERR_SANDBOX_RUNTIME).
  const info = (await docker.info()) as { Runtimes?: EngineRuntimes };
  o.log.info({ runtime: requireRuntime(info.Runtimes, o.config.sandbox.runtime) }, 'sandbox runtime');
  const driver = new DockerDriver(docker, o.config.sandbox);
  const sessions = new SessionManager({
    config: o.config,
    docker,
    driver,
    log: o.log,
    preparer: o.preparer,
    egress: o.egress,
    owner: o.owner,
    childUid: o.childUid,
    metrics: o.metrics,
    hooks: o.hooks,
    auditor: o.auditor,
    clock: o.clock,
  });
  await sessions.start();
  const control = await startControlApi(o.config.dataDir, (req) => sessions.handleControl(req), o.log);
  let closing: Promise<void> | undefined;
  return {
    sessions,
    driver,
    control,
    close: (opts) =>
      (closing ??= (async () => {
        await sessions.close(opts);
        await control.close();
      })()),
  };
}
