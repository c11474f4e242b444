/**
 * A sandbox's memory and CPU time, read from its container's cgroup on the host (Live sessions,
 * docs/runtime.md): no Docker API call, so listing many sessions stays cheap. Memory is the sum
 * of its processes' PSS (the figure docs/capacity.md uses), CPU the cgroup's total CPU time.
 * cgroup v1 (cgroupfs driver) and v2 (systemd or cgroupfs driver); undefined where neither is
 * readable (a rootless daemon, gVisor's own cgroups).
 */
import { readFileSync } from 'node:fs';

export interface SandboxUsage {
  /** Sum of the PSS of the container's processes, bytes. */
  memoryBytes: number;
  /** CPU time its cgroup used since it started, seconds. */
  cpuSeconds: number;
}

const read = (path: string): string | undefined => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
};

function pss(pid: string): number {
  const m = /^Pss:\s+(\d+) kB$/m.exec(read(`/proc/${pid}/smaps_rollup`) ?? '');
  return m ? Number(m[1]) * 1024 : 0;
}

/** The container's processes and CPU time, from the first cgroup layout that has it. */
function cgroup(id: string, root: string): { procs: string; cpuSeconds: number } | undefined {
  const v1procs = read(`${root}/memory/docker/${id}/cgroup.procs`);
  const v1cpu = read(`${root}/cpuacct/docker/${id}/cpuacct.usage`);
  if (v1procs !== undefined && v1cpu !== undefined) return { procs: v1procs, cpuSeconds: Number(v1cpu.trim()) / 1e9 };
  for (const dir of [`${root}/system.slice/docker-${id}.scope`, `${root}/docker/${id}`]) {
    const procs = read(`${dir}/cgroup.procs`);
    const usec = /^usage_usec (\d+)$/m.exec(read(`${dir}/cpu.stat`) ?? '');
    if (procs !== undefined && usec) return { procs, cpuSeconds: Number(usec[1]) / 1e6 };
  }
  return undefined;
}

/** Memory and CPU of the container `containerId` (full id); undefined when its cgroup cannot be read. */
export function sandboxUsage(containerId: string, root = '/sys/fs/cgroup'): SandboxUsage | undefined {
  if (!/^[0-9a-f]{64}$/.test(containerId)) return undefined;
  const c = cgroup(containerId, root);
  if (!c) return undefined;
  const memoryBytes = c.procs
    .split('\n')
    .filter((p) => /^\d+$/.test(p))
    .reduce((sum, p) => sum + pss(p), 0);
  return { memoryBytes, cpuSeconds: Math.round(c.cpuSeconds * 1000) / 1000 };
}
