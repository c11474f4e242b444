/**
 * Which processes of the agent's uid a turn left behind (supervisor/strays.ts): those whose
 * ancestors lead to PID 1 (reparented to init). Kept: the supervisor's descendants (the agent
 * child, its MCP servers, the operator shell), processes started from outside (parent pid 0,
 * not PID 1: docker exec), other uids, zombies. Also read from this machine's real /proc.
 */
import t from 'tap';
import { readProcs, strayPids, type ProcInfo } from '../../supervisor/strays.js';

const p = (pid: number, ppid: number, uid: number, state = 'S'): ProcInfo => ({
  pid,
  ppid,
  uids: [uid, uid, uid, uid],
  state,
});

t.test('strays are the agent-uid processes reparented to init', async (t) => {
  const SUP = 7;
  const procs = [
    p(1, 0, 0), // docker-init (never a stray, even of its own uid)
    p(SUP, 1, 0), // supervisor (root)
    p(20, SUP, 1001), // agent child
    p(21, 20, 1001), // a stdio MCP server of the child
    p(22, 21, 1001), // its helper
    p(30, 1, 1001), // `sleep &` whose shell exited
    p(31, 30, 1001), // and its child
    p(40, 0, 1001), // docker exec (an operator's attach shell)
    p(41, 40, 1001), // a command in it
    p(50, 1, 1001, 'Z'), // a zombie: init reaps it
    p(60, 1, 0), // root's own
    { pid: 70, ppid: 1, uids: [0, 1001, 0, 0], state: 'S' }, // effective uid 1001 counts
    p(80, 999, 1001), // parent vanished while /proc was read: not judged
  ];
  t.same(
    strayPids(procs, 1001, SUP).sort((a, b) => a - b),
    [30, 31, 70],
  );
  t.same(strayPids(procs, 1002, SUP), [], 'another uid: nothing');
  t.same(
    strayPids(procs, 0, SUP).sort((a, b) => a - b),
    [60, 70],
    "root's: never init, never the supervisor",
  );
});

t.test('reads the real /proc', async (t) => {
  const procs = readProcs();
  const self = procs.find((x) => x.pid === process.pid);
  t.ok(self, 'this process is listed');
  t.equal(self!.ppid, process.ppid, 'with its parent');
  t.equal(self!.uids[0], process.getuid!(), 'and its uid');
  t.same(
    strayPids(procs, process.getuid!(), process.pid).includes(process.pid),
    false,
    'a process is kept when it is the one to keep under',
  );
});
