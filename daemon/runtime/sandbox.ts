/** One sandbox as the runtime tracks it, and what the operator sees of it. */
import type { EgressHandle, TurnRequest } from '../../core/sandbox-protocol.js';
import type { TurnCalls } from '../../core/turn-calls.js';
import type { SandboxClient } from './sandbox-client.js';
import type { TurnPhase } from './turn-phase.js';

export type SandboxState = 'starting' | 'pool' | 'ready' | 'busy' | 'dead' | 'stopping';

/** What `sessions ls` / `inspect` show. Never tokens. */
export interface SandboxInfo {
  slot: string;
  containerId: string;
  containerName: string;
  sessionId: string | null;
  userId: number | null;
  state: SandboxState;
  createdAt: number;
  claimedAt: number | null;
  lastUsedAt: number;
  turns: number;
  stale: boolean;
  adopted: boolean;
  fromPool: boolean;
  /** The running turn's start and phase (turn-phase.ts); null when no turn runs. */
  turn: TurnPhase | null;
}

export interface Sandbox {
  slot: string;
  dir: string;
  runDir: string;
  containerId: string;
  containerName: string;
  sessionId?: string;
  userId?: number;
  state: SandboxState;
  createdAt: number;
  claimedAt?: number;
  lastUsedAt: number;
  turns: number;
  adopted: boolean;
  fromPool: boolean;
  client?: SandboxClient;
  egress?: EgressHandle;
  /** Workspace bind-mounted into a pool slot at claim (host path), to unmount on removal. */
  boundWorkspace?: string;
  /** Digest of the agent env it started with; undefined when unknown (adopted from an older daemon). */
  agentEnvDigest?: string;
  /** The revision of the chat's model it was prepared for (`<id>:<version>`); a turn for another replaces it. */
  modelRevision?: string;
  /** Its user's agent policy changed since it started: checked before its next turn. */
  policyChanged?: boolean;
  /** The turn its agent's conversation ends with, as far as the daemon knows (context-sync.ts). */
  contextHead?: string | null;
  /** The turn it runs now (a held mail send is asked about in it). */
  turn?: TurnRequest;
  /** The tool calls that turn runs now, from its events (a held send is bound to one: core/turn-calls.ts). */
  calls?: TurnCalls;
  /** What the running turn is doing now, for Live sessions (turn-phase.ts). */
  phase?: TurnPhase;
}

/** Connected to its supervisor (not lost, not closed). */
export function connected(sb: Sandbox): boolean {
  return !!sb.client && !sb.client.closed;
}

export function sandboxInfo(sb: Sandbox, stale: boolean): SandboxInfo {
  const { slot, containerId, containerName, state, createdAt, lastUsedAt, turns, adopted, fromPool } = sb;
  return {
    slot,
    containerId,
    containerName,
    sessionId: sb.sessionId ?? null,
    userId: sb.userId ?? null,
    state,
    createdAt,
    claimedAt: sb.claimedAt ?? null,
    lastUsedAt,
    turns,
    stale,
    adopted,
    fromPool,
    turn: sb.phase ?? null,
  };
}
