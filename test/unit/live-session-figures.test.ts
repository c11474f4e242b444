/**
 * Live sessions' figures (docs/runtime.md, "Live sessions"): a running turn's phase follows the
 * agent's events, and a sandbox's memory and CPU time come from its cgroup on the host (both
 * layouts, from real files and a real process's PSS).
 */
import t from 'tap';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nextPhase, turnStarted } from '../../daemon/runtime/turn-phase.js';
import { sandboxUsage } from '../../daemon/runtime/cgroup-stats.js';

t.test('the phase follows the events; a delta stream keeps its start', async (t) => {
  let p = turnStarted(1000);
  t.same(p, { startedAt: 1000, phase: 'waiting for model', phaseSince: 1000 });
  p = nextPhase(p, { type: 'text_delta', text: 'Hi' }, 1500);
  t.same(p, { startedAt: 1000, phase: 'model answering', phaseSince: 1500 });
  t.equal(nextPhase(p, { type: 'text_delta', text: ' there' }, 1700), p, 'more text: same phase, same start');
  p = nextPhase(p, { type: 'tool_start', call_id: 'c1', tool: 'run_python', input: {} }, 2000);
  t.equal(p.phase, 'running run_python');
  p = nextPhase(p, { type: 'tool_progress', call_id: 'c1', tool: 'run_python', stream: 'stdout', text: '1' }, 2100);
  t.equal(p.phaseSince, 2000, 'progress of the same tool keeps the phase start');
  p = nextPhase(p, { type: 'tool_end', call_id: 'c1', tool: 'run_python', ok: true, duration_ms: 100 }, 2200);
  t.same(p, { startedAt: 1000, phase: 'waiting for model', phaseSince: 2200 }, 'the result goes back to the model');
  p = nextPhase(p, { type: 'status', text: 'retrying', attempt: 2, of: 3 }, 2300);
  t.equal(p.phase, 'model retrying (2 of 3)');
});

t.test('memory and CPU from the cgroup, v1 and v2 layouts; none when unreadable', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'cg-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const v1 = 'a'.repeat(64);
  const v2 = 'b'.repeat(64);
  // This test's own process stands in for the container's: its PSS is real and above zero.
  mkdirSync(join(root, 'memory/docker', v1), { recursive: true });
  mkdirSync(join(root, 'cpuacct/docker', v1), { recursive: true });
  writeFileSync(join(root, 'memory/docker', v1, 'cgroup.procs'), `${process.pid}\n999999999\n`);
  writeFileSync(join(root, 'cpuacct/docker', v1, 'cpuacct.usage'), '2500000000\n');
  const a = sandboxUsage(v1, root);
  t.ok(a && a.memoryBytes > 1024 * 1024, 'v1: the PSS of the processes listed (a gone pid counts 0)');
  t.equal(a?.cpuSeconds, 2.5, 'v1: cpuacct.usage in seconds');
  mkdirSync(join(root, `system.slice/docker-${v2}.scope`), { recursive: true });
  writeFileSync(join(root, `system.slice/docker-${v2}.scope/cgroup.procs`), `${process.pid}\n`);
  writeFileSync(join(root, `system.slice/docker-${v2}.scope/cpu.stat`), 'usage_usec 1234567\nuser_usec 1000000\n');
  const b = sandboxUsage(v2, root);
  t.ok(b && b.memoryBytes > 1024 * 1024, 'v2 (systemd): PSS');
  t.equal(b?.cpuSeconds, 1.235, 'v2: usage_usec in seconds');
  t.equal(sandboxUsage('c'.repeat(64), root), undefined, 'no cgroup: undefined');
  t.equal(sandboxUsage('../../etc', root), undefined, 'not a container id: never a path');
});
