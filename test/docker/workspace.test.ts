/**
 * The per-user /workspace with real containers, on the default pool path (a pre-started
 * container gets the user's workspace bind-mounted into it at claim, through rslave propagation)
 * and on the cold path (the workspace is a mount of the container from its creation): what the
 * agent writes lands in <data dir>/workspaces/<user id>/ on the host, outlives the sandbox, is
 * there again in the user's next session, and is neither visible to nor reachable from another
 * user's sandbox (nor a waiting pool container).
 */
import t from 'tap';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type Docker from 'dockerode';
import { createLogger } from '../../core/index.js';
import type { AgentEvent } from '../../core/sandbox-protocol.js';
import { SessionManager } from '../../daemon/runtime/session-manager.js';
import { mountsOf } from '../../daemon/runtime/workspaces.js';
import {
  dataDir,
  dockerOrSkip,
  ensureTestImage,
  execIn,
  runtimeConfig,
  SANDBOX_RUNTIME,
  sweep,
  uniqueOwner,
} from './helpers.js';

const log = createLogger({ level: 'warn', destination: process.stderr });
const docker = await dockerOrSkip(t as unknown as Parameters<typeof dockerOrSkip>[0]);

const ALICE = 11;
const BOB = 12;

function turn(m: SessionManager, sessionId: string, userId: number, prompt = 'hello') {
  const events: AgentEvent[] = [];
  return m
    .runTurn({
      userId,
      sessionId,
      turnId: randomBytes(6).toString('hex'),
      prompt,
      signal: new AbortController().signal,
      onEvent: (e) => events.push(e),
    })
    .then((r) => ({ ...r, events }));
}

/** Whether a uid-1001 process in the container finds a file of this name anywhere (proc and sys aside). */
async function findsFile(docker: Docker, containerId: string, name: string): Promise<string> {
  const r = await execIn(docker, containerId, [
    '/bin/sh',
    '-c',
    `find / \\( -path /proc -o -path /sys \\) -prune -o -name '${name}' -print 2>/dev/null; true`,
  ]);
  return r.stdout.trim();
}

if (docker) {
  const image = await ensureTestImage(docker);

  for (const mode of ['pool', 'cold'] as const) {
    t.test(`per-user workspace persists across sessions and stays private (${mode} start)`, async (t) => {
      const owner = uniqueOwner(`ws-${mode}`);
      const dir = dataDir(t);
      t.teardown(() => sweep(docker, owner));
      const config = runtimeConfig(dir, image, { AIRLOCK_POOL_SIZE: mode === 'pool' ? '1' : '0' });
      const m = new SessionManager({ config, docker, log, owner });
      t.teardown(() => m.close({ removeContainers: true }));
      await m.start();
      // Under runsc the pool is off (a mount made after start does not reach a gVisor sandbox).
      const pooled = mode === 'pool' && SANDBOX_RUNTIME === 'runc';
      t.equal(
        m.poolActive,
        pooled,
        pooled
          ? 'the pool is on (root daemon, shared sandboxes folder)'
          : mode === 'pool'
            ? 'runsc: the pool is off, sessions cold-start'
            : 'no pool',
      );

      // Which container a new session gets: the waiting pool container, or a cold one.
      const claim = async (sessionId: string, userId: number, prompt?: string) => {
        await m.poolReady();
        const waiting = m.list().find((s) => s.state === 'pool')?.containerId;
        const r = await turn(m, sessionId, userId, prompt);
        t.equal(r.stop_reason, 'end_turn', `${sessionId}: the turn ends normally`);
        const info = await m.inspect(sessionId);
        t.equal(info.fromPool, pooled, `${sessionId}: fromPool = ${pooled}`);
        if (pooled) t.equal(info.containerId, waiting, `${sessionId}: runs in the container that waited in the pool`);
        return info.containerId;
      };
      const aliceWs = join(dir, 'workspaces', String(ALICE));
      const bobWs = join(dir, 'workspaces', String(BOB));

      // ---- alice's first session: the agent's chart tool and a shell as the agent write into /workspace.
      const a1 = await claim('alice-1', ALICE, 'chart 1 2 3 and email the chart to x@example.test');
      const pngs = readdirSync(join(aliceWs, '.agent-attachments')).filter((f) => f.endsWith('.png'));
      t.equal(pngs.length, 1, "rasterize_chart's PNG is in the user's workspace on the host");
      const marker = `note-${randomBytes(6).toString('hex')}.txt`;
      const secret = randomBytes(12).toString('hex');
      const w = await execIn(docker, a1, ['/bin/sh', '-c', `echo ${secret} > /workspace/${marker} && id -u`]);
      t.equal(w.code, 0, `written as the agent user ${w.stderr}`);
      t.equal(w.stdout.trim(), '1001');
      t.equal(
        readFileSync(join(aliceWs, marker), 'utf8').trim(),
        secret,
        `the file is on the host under workspaces/${ALICE}/`,
      );

      // ---- bob's session, while alice's is live: none of alice's files, no way to her workspace.
      const b1 = await claim('bob-1', BOB);
      t.not(b1, a1, 'bob has his own container');
      t.equal(await findsFile(docker, b1, marker), '', "alice's file is nowhere in bob's container");
      t.equal(await findsFile(docker, b1, pngs[0]), '', "nor alice's chart");
      const ls = await execIn(docker, b1, ['/bin/sh', '-c', 'find /workspace']);
      t.notMatch(ls.stdout, new RegExp(`${marker}|\\.png`), "bob's /workspace lists nothing of alice's");
      // Each workspace is its own loop-mounted ext4 (workspace-quota.test.ts); the sandbox sees its
      // device, not the host path, so tell the two apart by device.
      const mounts = await execIn(docker, b1, ['cat', '/proc/self/mountinfo']);
      const devOf = (ws: string) => mountsOf(ws).at(-1)?.source ?? 'none';
      const sources = mounts.stdout
        .split('\n')
        .filter((l) => l.split(' ')[4] === '/workspace')
        .map((l) => l.split(' - ')[1]?.split(' ')[1]);
      if (SANDBOX_RUNTIME === 'runc') {
        t.equal(sources.at(-1), devOf(bobWs), "bob's own workspace is what is mounted at /workspace");
        t.notOk(sources.includes(devOf(aliceWs)), "alice's workspace is not mounted in bob's container");
      } else {
        // gVisor shows every mount as 9p served by its gofer, without a host device or path.
        t.same(sources, ['none'], 'runsc: /workspace is one 9p mount of the gofer');
      }
      t.notMatch(mounts.stdout, dir, 'the host path of the data folder is not in the mountinfo');
      const peek = await execIn(docker, b1, [
        '/bin/sh',
        '-c',
        `cat /workspace/../workspaces/${ALICE}/${marker} /workspace/../${ALICE}/${marker}`,
      ]);
      t.not(peek.code, 0, 'a path out of /workspace does not lead to alice');
      t.notMatch(peek.stdout, secret);
      const bobMarker = `note-${randomBytes(6).toString('hex')}.txt`;
      t.equal((await execIn(docker, b1, ['/bin/sh', '-c', `echo bob > /workspace/${bobMarker}`])).code, 0);
      t.ok(existsSync(join(bobWs, bobMarker)), `bob's file lands under workspaces/${BOB}/`);
      t.notOk(existsSync(join(aliceWs, bobMarker)), "and not in alice's workspace");
      if (pooled) {
        await m.poolReady();
        const waiting = m.list().find((s) => s.state === 'pool')!.containerId;
        const empty = await execIn(docker, waiting, ['/bin/sh', '-c', 'find /workspace -mindepth 1']);
        t.equal(empty.stdout.trim(), '', 'a waiting pool container sees an empty /workspace (no user bound yet)');
      }

      // ---- alice's sandbox ends; her files stay on the host.
      await m.kill('alice-1');
      await t.rejects(
        docker.getContainer(a1).inspect(),
        { statusCode: 404 } as unknown as Error,
        "alice's first container is gone",
      );
      t.equal(
        readFileSync(join(aliceWs, marker), 'utf8').trim(),
        secret,
        'the file outlives the sandbox (removing it did not touch the workspace)',
      );

      // ---- alice's next session (a new container): her files are there, bob's are not.
      const a2 = await claim('alice-2', ALICE);
      t.not(a2, a1, 'a new container');
      const read = await execIn(docker, a2, ['cat', `/workspace/${marker}`]);
      t.equal(read.code, 0, read.stderr);
      t.equal(read.stdout.trim(), secret, "alice's next session reads the file written in her first");
      // find, not ls: coreutils' statx fails with EINVAL under this gVisor version.
      const charts = await execIn(docker, a2, ['find', '/workspace/.agent-attachments']);
      t.match(charts.stdout, pngs[0], 'and her earlier chart');
      t.equal(await findsFile(docker, a2, bobMarker), '', "bob's file is nowhere in alice's container");
    });
  }
}
