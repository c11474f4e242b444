/**
 * The idle agent child's launch: one definition for the container's entry point, which launches
 * the child as its first act, before it loads the supervisor (the two boots overlap: docs/runtime.md,
 * "Cold start, step by step"), and for the Supervisor, which takes that process over or spawns the
 * same launch itself. Light on purpose: node builtins and core/sandbox-env.js only.
 */
import { existsSync } from 'node:fs';
import type { AgentLaunch } from '../core/agent-launch.js';
import { SNAPSHOT_BLOB, COMPILE_CACHE_ENV, SANDBOX_NODE_FLAGS, SANDBOX_MALLOC_ENV } from '../core/sandbox-env.js';

/** Where the idle child starts: not the workspace, whose folder a claim binds later. */
export const IDLE_CHILD_CWD = '/';

/** The agent child's command: from its startup snapshot when the image has one, else its entry. */
export function agentCommand(): string[] {
  const blob = new URL(`../agent/${SNAPSHOT_BLOB}`, import.meta.url).pathname;
  // Its run-time import() of the SDKs is Node's experimental main-context loader (core/runtime-import.ts).
  if (existsSync(blob))
    return [process.execPath, ...SANDBOX_NODE_FLAGS, '--disable-warning=ExperimentalWarning', '--snapshot-blob', blob];
  return [process.execPath, ...SANDBOX_NODE_FLAGS, new URL('../agent/main.js', import.meta.url).pathname];
}

/** The child's environment before any session: nothing of the user's, nothing of the supervisor's. */
export function childBaseEnv(): Record<string, string> {
  const cache = process.env[COMPILE_CACHE_ENV];
  return {
    HOME: '/home/agent',
    PATH: '/usr/local/bin:/usr/bin:/bin',
    LANG: 'C.UTF-8',
    ...SANDBOX_MALLOC_ENV,
    ...(cache ? { [COMPILE_CACHE_ENV]: cache } : {}),
  };
}

export function idleChildLaunch(o: { command: readonly string[]; uid: number; gid: number; cwd: string }): AgentLaunch {
  const [command, ...args] = o.command;
  return { command, args, env: childBaseEnv(), uid: o.uid, gid: o.gid, cwd: o.cwd };
}
