/**
 * Disk quotas and host paths, with real containers (issue #19):
 * - a user's /workspace is a loop-mounted ext4 image of AIRLOCK_WORKSPACE_QUOTA_MB: the agent
 *   (uid 1001) writing until ENOSPC takes at most the quota from the host's disk, and another
 *   user's workspace is unaffected; /tmp, /home/agent and /dev/shm are size-limited tmpfs;
 * - `/proc/self/mountinfo` inside a sandbox (pool member, claimed pool member, cold start) does
 *   not reveal the host path of the data folder;
 * - a plain workspace folder from before quotas is migrated into its image on first use;
 * - a larger quota grows existing images at the next start; the daemon's stop unmounts them.
 *
 * Needs a root daemon (loop mounts); under CI=true it runs as root and must not skip.
 */
import t from 'tap';
import { chownSync, mkdirSync, readFileSync, statfsSync, statSync, writeFileSync } from 'node:fs';
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

const RUNC = SANDBOX_RUNTIME === 'runc';

const log = createLogger({ level: 'warn', destination: process.stderr });
const docker = await dockerOrSkip(t as unknown as Parameters<typeof dockerOrSkip>[0]);
const MB = 1024 * 1024;
const QUOTA_MB = 32;
const ALICE = 21;
const BOB = 22;
const CAROL = 23;

function turn(m: SessionManager, sessionId: string, userId: number) {
  const events: AgentEvent[] = [];
  return m.runTurn({
    userId,
    sessionId,
    turnId: randomBytes(6).toString('hex'),
    prompt: 'hello',
    signal: new AbortController().signal,
    onEvent: (e) => events.push(e),
  });
}

/** Free bytes of the file system holding `path`, for unprivileged users. */
function freeBytes(path: string): number {
  const s = statfsSync(path);
  return s.bavail * s.bsize;
}

interface MountLine {
  root: string;
  options: string;
  fstype: string;
  source: string;
}

/** The mountinfo of a container (read by the agent's uid), and the mount in effect on a target. */
async function mountinfo(docker: Docker, id: string): Promise<{ text: string; line(target: string): MountLine }> {
  const r = await execIn(docker, id, ['cat', '/proc/self/mountinfo']);
  const lines = r.stdout.split('\n').filter(Boolean);
  return {
    text: r.stdout,
    // The last mount on a target is the one in effect (a claimed pool member has two on /workspace).
    line: (target) => {
      const l = lines.filter((x) => x.split(' ')[4] === target).at(-1) ?? '';
      const [pre, post] = l.split(' - ');
      const f = pre?.split(' ') ?? [];
      const p = post?.split(' ') ?? [];
      return { root: f[3] ?? '', options: f[5] ?? '', fstype: p[0] ?? '', source: p[1] ?? '' };
    },
  };
}

if (docker && process.getuid?.() !== 0) {
  if (process.env.CI === 'true') t.fail('CI=true: the quota test needs a root daemon (loop mounts) and must not skip');
  else t.plan(0, 'workspace quotas need a root daemon (loop mounts); this test runs as a non-root user');
} else if (docker) {
  const image = await ensureTestImage(docker);

  t.test(
    'workspace quota: ENOSPC at the quota inside the sandbox, the host loses at most the quota; no host path in mountinfo',
    async (t) => {
      const owner = uniqueOwner('quota');
      const dir = dataDir(t);
      t.teardown(() => sweep(docker, owner));
      // carol has a plain workspace folder from before quotas.
      const carolWs = join(dir, 'workspaces', String(CAROL));
      mkdirSync(join(carolWs, '.agent-attachments'), { recursive: true });
      writeFileSync(join(carolWs, 'old-notes.txt'), 'written before quotas\n');
      for (const p of [carolWs, join(carolWs, '.agent-attachments'), join(carolWs, 'old-notes.txt')])
        chownSync(p, 1001, 1001);

      const config = runtimeConfig(dir, image, {
        AIRLOCK_POOL_SIZE: '1',
        AIRLOCK_WORKSPACE_QUOTA_MB: String(QUOTA_MB),
      });
      let m = new SessionManager({ config, docker, log, owner });
      t.teardown(() => m.close({ removeContainers: true }));
      await m.start();
      // Under runsc the pool is off (a mount made after start does not reach a gVisor sandbox).
      t.equal(
        m.poolActive,
        RUNC,
        RUNC ? 'the pool is on (root daemon, shared sandboxes folder)' : 'runsc: the pool is off',
      );

      // ---- a waiting pool member: no host path in its mountinfo.
      let waiting: string | undefined;
      if (RUNC) {
        await m.poolReady();
        waiting = m.list().find((s) => s.state === 'pool')!.containerId;
        const mi0 = await mountinfo(docker, waiting);
        t.notMatch(mi0.text, dir, 'a waiting pool member does not see the host path of the data folder');
        t.equal(mi0.line('/run/airlock').fstype, 'tmpfs', '/run/airlock comes from the sandboxes tmpfs');
        t.match(
          mi0.line('/run/airlock').root,
          /^\/[a-f0-9]{16}\/run$/,
          '/run/airlock shows only /<slot>/run as its root',
        );
      }

      // ---- alice claims it: her workspace is her ext4 image, mount root /.
      t.equal((await turn(m, 'alice-1', ALICE)).stop_reason, 'end_turn');
      const a1 = (await m.inspect('alice-1')).containerId;
      if (RUNC) t.equal(a1, waiting, 'alice runs in the pool member');
      const aliceWs = join(dir, 'workspaces', String(ALICE));
      const aliceImg = join(dir, 'workspace-images', `${ALICE}.ext4`);
      const hostMount = mountsOf(aliceWs).at(-1);
      t.equal(hostMount?.fstype, 'ext4', "on the host, alice's workspace is an ext4 mount");
      t.match(hostMount?.source ?? '', /^\/dev\/loop\d+$/, 'from a loop device');
      t.equal(statSync(aliceImg).size, QUOTA_MB * MB, 'her image has the size of the quota');
      t.equal(statSync(aliceImg).mode & 0o777, 0o600, 'the image is root-only (0600)');
      const mi1 = await mountinfo(docker, a1);
      t.notMatch(mi1.text, dir, 'the sandbox does not see the host path of the data folder');
      const wsLine = mi1.line('/workspace');
      t.equal(wsLine.root, '/', '/workspace is the root of its file system');
      if (RUNC) {
        t.equal(wsLine.fstype, 'ext4', '/workspace is ext4');
        t.equal(wsLine.source, hostMount?.source, "/workspace is alice's loop device");
        t.match(wsLine.options, /nosuid/, '/workspace is nosuid');
        t.match(wsLine.options, /nodev/, '/workspace is nodev');
      } else {
        t.equal(
          wsLine.fstype,
          '9p',
          "runsc: /workspace is served by gVisor's gofer (9p), which shows no host path or device",
        );
      }
      // find, not ls: coreutils' statx fails with EINVAL under this gVisor version.
      const ls = await execIn(docker, a1, ['find', '/workspace', '-mindepth', '1', '-maxdepth', '1']);
      t.equal(
        ls.stdout.trim(),
        '/workspace/.agent-attachments',
        'the workspace starts empty but for .agent-attachments (no lost+found)',
      );

      // ---- bob (a cold start or the refilled pool member) writes a little first.
      t.equal((await turn(m, 'bob-1', BOB)).stop_reason, 'end_turn');
      const b1 = (await m.inspect('bob-1')).containerId;
      t.equal(
        (await execIn(docker, b1, ['/bin/sh', '-c', 'head -c 4194304 /dev/zero > /workspace/before && sync'])).code,
        0,
        'bob writes 4 MiB',
      );

      // ---- alice fills her workspace: ENOSPC inside; the host loses at most the quota.
      const before = freeBytes(dir);
      const fa = await execIn(docker, a1, ['/bin/sh', '-c', 'fallocate -l 2G /workspace/big; echo rc=$?']);
      t.match(
        fa.stdout + fa.stderr,
        /No space left on device/,
        `fallocate -l 2G as uid 1001 fails with ENOSPC (${fa.stderr.trim()})`,
      );
      const dd = await execIn(docker, a1, [
        '/bin/sh',
        '-c',
        'rm -f /workspace/big; dd if=/dev/zero of=/workspace/fill bs=1M count=600; echo rc=$?; sync',
      ]);
      t.match(dd.stderr, /No space left on device/, 'writing 600 MiB as uid 1001 stops at ENOSPC');
      t.match(dd.stdout, /rc=1/, 'dd fails');
      const df = await execIn(docker, a1, ['/bin/sh', '-c', "df -k /workspace | tail -1 | awk '{print $2, $4}'"]);
      const [sizeK, availK] = df.stdout.trim().split(' ').map(Number);
      t.ok(sizeK <= QUOTA_MB * 1024, `df inside: /workspace is ${sizeK} KiB, not more than the quota`);
      t.ok(availK < 1024, `df inside: nothing left (${availK} KiB)`);
      const after = freeBytes(dir);
      const allocated = statSync(aliceImg).blocks * 512;
      t.ok(
        allocated <= QUOTA_MB * MB,
        `the image holds ${(allocated / MB).toFixed(1)} MiB of the host's disk, at most the quota`,
      );
      // The host is shared with other work, so allow slack; without the quota the drop would be ≥ 600 MiB.
      const drop = (before - after) / MB;
      t.ok(
        drop <= QUOTA_MB + 256,
        `the host's free space dropped by ${drop.toFixed(1)} MiB (quota ${QUOTA_MB} MiB; 600 MiB were attempted)`,
      );

      // ---- bob is unaffected: he still has his whole quota.
      const bw = await execIn(docker, b1, [
        '/bin/sh',
        '-c',
        'head -c 8388608 /dev/zero > /workspace/after && sync && find /workspace/after',
      ]);
      t.equal(bw.code, 0, `bob still writes after alice filled hers ${bw.stderr}`);
      const bdf = await execIn(docker, b1, ['/bin/sh', '-c', "df -k /workspace | tail -1 | awk '{print $4}'"]);
      // 12 MiB written of his ~25 MiB usable (ext4's journal and metadata take the rest of 32).
      t.ok(
        Number(bdf.stdout.trim()) > 8 * 1024,
        `bob's workspace has its own free space (${bdf.stdout.trim()} KiB; alice's ${availK} KiB)`,
      );
      const bmi = await mountinfo(docker, b1);
      t.notMatch(bmi.text, dir, "bob's sandbox does not see the host path either");
      if (RUNC) t.not(bmi.line('/workspace').source, hostMount?.source, "bob's /workspace is not alice's device");

      // ---- size-limited tmpfs: /tmp, /home/agent, /dev/shm.
      for (const [path, maxMb] of [
        ['/tmp', 64],
        ['/home/agent', 16],
        ['/dev/shm', 16],
      ] as const) {
        const w = await execIn(docker, a1, [
          '/bin/sh',
          '-c',
          `dd if=/dev/zero of=${path}/fill bs=1M count=200 2>&1; df -k ${path} | tail -1 | awk '{print $2}'; rm -f ${path}/fill`,
        ]);
        t.match(w.stdout, /No space left on device/, `${path}: writing 200 MiB stops at ENOSPC`);
        const size = Number(w.stdout.trim().split('\n').at(-1));
        t.ok(size > 0 && size <= maxMb * 1024, `${path} is a tmpfs of ${size} KiB (≤ ${maxMb} MiB)`);
      }

      // ---- carol's plain folder from before quotas is migrated on first use (cold start: the pool may be empty).
      t.equal((await turn(m, 'carol-1', CAROL)).stop_reason, 'end_turn');
      const c1 = (await m.inspect('carol-1')).containerId;
      t.equal(mountsOf(carolWs).at(-1)?.fstype, 'ext4', "carol's workspace is now her ext4 image");
      const old = await execIn(docker, c1, ['cat', '/workspace/old-notes.txt']);
      t.equal(old.stdout, 'written before quotas\n', 'her old file is there, in the image');
      if (RUNC) t.equal((await mountinfo(docker, c1)).line('/workspace').fstype, 'ext4', 'her /workspace is ext4');

      // ---- the daemon stops with no sandbox left: the workspaces are unmounted; alice's files stay in her image.
      await m.close({ removeContainers: true });
      t.equal(mountsOf(aliceWs).length, 0, "alice's workspace is unmounted when the daemon stops with no sandbox left");
      t.equal(mountsOf(join(dir, 'sandboxes')).length, 0, 'so is the sandboxes tmpfs');

      // ---- a larger quota grows the existing images at the next start.
      await sweep(docker, owner);
      const config2 = runtimeConfig(dir, image, {
        AIRLOCK_POOL_SIZE: '0',
        AIRLOCK_WORKSPACE_QUOTA_MB: String(QUOTA_MB * 2),
      });
      m = new SessionManager({ config: config2, docker, log, owner });
      await m.start();
      t.equal(mountsOf(aliceWs).at(-1)?.fstype, 'ext4', "alice's image is mounted again at start");
      t.equal(statSync(aliceImg).size, QUOTA_MB * 2 * MB, 'her image grew to the new quota');
      t.equal((await turn(m, 'alice-2', ALICE)).stop_reason, 'end_turn');
      const a2 = (await m.inspect('alice-2')).containerId;
      t.equal((await execIn(docker, a2, ['find', '/workspace/fill'])).code, 0, 'her files are still there');
      const gdf = await execIn(docker, a2, ['/bin/sh', '-c', "df -k /workspace | tail -1 | awk '{print $2}'"]);
      t.ok(Number(gdf.stdout.trim()) > QUOTA_MB * 1024, `df inside shows the larger size (${gdf.stdout.trim()} KiB)`);
      const more = await execIn(docker, a2, ['/bin/sh', '-c', 'head -c 8388608 /dev/zero > /workspace/more']);
      t.equal(more.code, 0, `and she can write again ${more.stderr}`);
      const rmi = await mountinfo(docker, a2);
      t.notMatch(rmi.text, dir, 'a cold-started sandbox does not see the host path of the data folder');
      t.equal(rmi.line('/workspace').root, '/', 'cold start: /workspace is the root of its file system');
      t.notMatch(
        readFileSync('/proc/self/mountinfo', 'utf8'),
        `${dir}/workspace-images/.mnt-`,
        'no migration mount left behind',
      );
    },
  );
}
