/**
 * Spawning the agent child, apart from hosting it (core/agent-host.ts), so that a process can
 * start its agent before it loads anything else: the supervisor launches its idle child as its
 * first act and only then evaluates its own modules (the proxy, the protocol schemas), so the
 * two boots overlap (docs/runtime.md, "Cold start, step by step"). This file imports nothing but
 * node:child_process for that reason.
 *
 * A launched process may fail to spawn or exit before its host is built; what happened meanwhile
 * is recorded here and replayed by the host (AgentProcess), so no event is lost or unhandled.
 */
import { spawn, type ChildProcess } from 'node:child_process';

/** How the child is started: its whole environment (never the host's own), uid, gid, cwd. */
export interface AgentLaunch {
  command: string;
  args?: string[];
  env: Record<string, string>;
  uid?: number;
  gid?: number;
  cwd?: string;
}

/** A spawned agent process and what it did before its host took it over. */
export interface LaunchedAgent {
  readonly launch: AgentLaunch;
  readonly proc: ChildProcess;
  /** The spawn failed (no 'exit' follows), or the process reported an error. */
  error?: NodeJS.ErrnoException;
  exit?: { code: number | null; signal: NodeJS.Signals | null };
}

export function launchAgent(launch: AgentLaunch): LaunchedAgent {
  const proc = spawn(launch.command, launch.args ?? [], {
    env: launch.env,
    stdio: ['pipe', 'pipe', 'pipe'],
    ...(launch.uid !== undefined ? { uid: launch.uid } : {}),
    ...(launch.gid !== undefined ? { gid: launch.gid } : {}),
    ...(launch.cwd !== undefined ? { cwd: launch.cwd } : {}),
  });
  const launched: LaunchedAgent = { launch, proc };
  // Listeners from the start: an 'error' without one would throw before the host exists.
  proc.on('error', (err: NodeJS.ErrnoException) => (launched.error ??= err));
  proc.on('exit', (code, signal) => (launched.exit ??= { code, signal }));
  return launched;
}

/** The same launch (command, arguments, env, ids, cwd): a launched process may stand for a spawn of it. */
export function sameLaunch(a: AgentLaunch, b: AgentLaunch): boolean {
  const norm = (l: AgentLaunch) =>
    JSON.stringify([
      l.command,
      l.args ?? [],
      Object.entries(l.env).sort(([x], [y]) => x.localeCompare(y)),
      l.uid,
      l.gid,
      l.cwd,
    ]);
  return norm(a) === norm(b);
}
