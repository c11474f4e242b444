/**
 * The ports of web/context.ts `WebServices` that only a sandbox runtime provides, as a server
 * without one (no Docker engine, or a web-only server) has them: each answers as "no sandbox here",
 * with the same coded error a route gave when the port was missing. The composition roots
 * (daemon/serve.ts, test/helpers/app.ts) use them, so no route checks for a missing port.
 */
import { AppError } from '../core/index.js';
import type { WebServices } from './context.js';

/** The WebServices a sandbox runtime provides. */
export type SandboxPorts = Pick<
  WebServices,
  'chat' | 'sandboxes' | 'sandboxAdmin' | 'agentSessions' | 'operator' | 'attach' | 'workspaces'
>;

const noRuntime = () =>
  new AppError('ERR_RUNTIME_UNAVAILABLE', 'the sandbox runtime is not running on this server (no Docker engine)');
const noSandboxes = () => new AppError('ERR_SESSION_UNAVAILABLE', 'this node runs no sandboxes');

/**
 * The sandbox ports of a server that runs none. `agentTokens`: `refused` when a runtime was
 * configured but its engine is unreachable (no sandbox is live, so no agent token is either);
 * `unchecked` on a web-only server (`serve` with `runtime: false`, the tests' web app), which
 * checks an agent token's signature and user only.
 */
export function noSandboxPorts(agentTokens: 'refused' | 'unchecked'): SandboxPorts {
  return {
    chat: { runner: null },
    // No sandbox of anyone is live: nothing to end or mark.
    sandboxes: { killForUser: () => 0 },
    sandboxAdmin: {
      list: () => {
        throw noRuntime();
      },
      restart: () => Promise.reject(noRuntime()),
      kill: () => Promise.reject(noRuntime()),
    },
    agentSessions: { isLive: () => agentTokens === 'unchecked' },
    operator: () => Promise.reject(noSandboxes()),
    attach: {
      container: () => Promise.reject(noSandboxes()),
      shell: () => Promise.reject(noSandboxes()),
    },
    workspaces: {
      ensure: () => {
        throw new AppError('ERR_CHAT_UNAVAILABLE', 'no workspace on this server (chat is not available)');
      },
    },
  };
}
