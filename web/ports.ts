/**
 * The ports the daemon hands the web app (WebServices in web/context.ts), each as the area that
 * uses it needs it. A leaf module: the route files and web/context.ts import it, it imports no
 * route file (so web/context.ts and the routes do not import each other in a circle).
 */
import type { ShellTerminal } from '../core/index.js';

/** The live-sessions admin page (web/admin-sessions-routes.ts), and ending a deleted chat's sandbox. */
export interface SandboxAdmin {
  list(): {
    containerId: string;
    sessionId: string | null;
    userId: number | null;
    state: string;
    createdAt: number;
    claimedAt: number | null;
    lastUsedAt: number;
    turns: number;
    stale: boolean;
    /** The running turn's start and phase (ms since the epoch); null or absent when none runs. */
    turn?: { startedAt: number; phase: string; phaseSince: number } | null;
  }[];
  /** A sandbox's memory (PSS sum) and CPU time by full container id; undefined when not measurable. */
  usage?(containerId: string): { memoryBytes: number; cpuSeconds: number } | undefined;
  restart(id: string): Promise<unknown>;
  kill(id: string): Promise<unknown>;
}

/** The runtime's operator API (the same typed requests as the control socket; web/fleet.ts). */
export type OperatorPort = (request: unknown) => Promise<unknown>;

/** A shell in a session's container for `sessions attach` from another node (web/fleet-attach.ts). */
export interface AttachPort {
  container(sessionId: string): Promise<string>;
  shell(containerId: string, o: { root: boolean; term: string }, tty: ShellTerminal): Promise<number>;
}

/** Whether an AGENT_USER_TOKEN's session is live (the agent API, web/memory-routes.ts). */
export interface AgentSessionCheck {
  isLive(sessionId: string, userId: number): boolean;
}
