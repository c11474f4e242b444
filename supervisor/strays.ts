/**
 * Processes of the agent's uid left behind by a turn (docs/security.md, Sandbox): a tool or a
 * shell the agent ran may have started something in the background (`cmd &`, a daemonised
 * process) whose parent then exited, so it was reparented to the container's init (PID 1). When
 * a turn ends the supervisor ends every such process: a process of the agent's uid (any of real,
 * effective, saved or filesystem uid) is kept only when its ancestors lead to the supervisor (the
 * agent child with its MCP servers, the supervisor's operator shell) or to a process started from
 * outside the container (parent pid 0 and not PID 1: `docker exec`, e.g. an operator's
 * `airlock sessions attach`); one that leads to PID 1 is a stray. Zombies are skipped (init reaps
 * them). Same rule under runc and runsc (gVisor shows the same /proc).
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcInfo {
  pid: number;
  ppid: number;
  uids: number[];
  state: string;
}

/** Every process /proc shows (one that ends while being read is left out). */
export function readProcs(root = '/proc'): ProcInfo[] {
  const out: ProcInfo[] = [];
  for (const name of readdirSync(root)) {
    if (!/^[1-9][0-9]*$/.test(name)) continue;
    let status: string;
    try {
      status = readFileSync(`${root}/${name}/status`, 'utf8');
    } catch {
      continue; // it ended meanwhile
    }
    const field = (k: string) => new RegExp(`^${k}:\\s*(.*)$`, 'm').exec(status)?.[1] ?? '';
    out.push({
      pid: Number(name),
      ppid: Number(field('PPid')) || 0,
      uids: field('Uid').split(/\s+/).filter(Boolean).map(Number),
      state: field('State').slice(0, 1),
    });
  }
  return out;
}

/** The pids of strays of `uid` (see above); `keepUnder` is the supervisor's pid. */
export function strayPids(procs: ProcInfo[], uid: number, keepUnder: number): number[] {
  const byPid = new Map(procs.map((p) => [p.pid, p]));
  const kept = (p: ProcInfo): boolean => {
    for (let cur: ProcInfo | undefined = p, hops = 0; cur && hops < 4096; cur = byPid.get(cur.ppid), hops++) {
      if (cur.pid === keepUnder) return true;
      if (cur.pid === 1) return false;
      if (cur.ppid === 0) return true; // started from outside the container
    }
    return true; // an ancestor ended while /proc was read: not judged this time
  };
  // Never init itself (gVisor, unlike Linux, lets a process inside kill it) nor the supervisor.
  return procs
    .filter((p) => p.pid !== 1 && p.pid !== keepUnder && p.state !== 'Z' && p.uids.includes(uid) && !kept(p))
    .map((p) => p.pid);
}

/**
 * End the strays of `uid` with SIGKILL; resolves with their count. The supervisor holds no
 * CAP_KILL, so the signal is sent by a shell running as that uid (same uid may signal).
 */
export async function endStrays(uid: number, gid: number, keepUnder: number): Promise<number> {
  // The child under the supervisor's own uid (a test-only override): nothing is a stray of it.
  if (uid === process.getuid?.()) return 0;
  const pids = strayPids(readProcs(), uid, keepUnder);
  if (pids.length === 0) return 0;
  await new Promise<void>((resolve) => {
    const p = spawn('/bin/sh', ['-c', 'kill -KILL "$@" 2>/dev/null; exit 0', 'end-strays', ...pids.map(String)], {
      uid,
      gid,
      stdio: 'ignore',
      env: { PATH: '/usr/bin:/bin' },
    });
    p.on('exit', () => resolve());
    p.on('error', () => resolve());
  });
  return pids.length;
}
