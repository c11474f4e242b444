/**
 * Real-engine tests of the sandbox runtime: hardening seen from inside the container, warm
 * reuse, one-file bundles, a failed start cleaned up, orphans removed at start, and the capacity
 * limit. Token isolation and what the agent can leave behind are in sandbox-isolation.test.ts.
 */
import t from 'tap';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { createLogger, createMetrics } from '../../core/index.js';
import { SessionManager } from '../../daemon/runtime/session-manager.js';
import {
  dataDir,
  dockerOrSkip,
  ensureTestImage,
  execIn,
  hostCgroup,
  runtimeConfig,
  SANDBOX_RUNTIME,
  sweep,
  uniqueOwner,
} from './helpers.js';
import { hostPidsLimit } from '../../daemon/runtime/docker-driver.js';
import { airlockLabels, manager, textOf, turn } from './sandbox-kit.js';
import { TestClock } from '../helpers/clock.js';

const RUNSC = SANDBOX_RUNTIME === 'runsc';

const log = createLogger({ level: 'warn', destination: process.stderr });
const docker = await dockerOrSkip(t as unknown as Parameters<typeof dockerOrSkip>[0]);

if (docker) {
  const image = await ensureTestImage(docker);

  t.test('hardening seen from inside the container', async (t) => {
    // Limits other than the defaults, so the assertions below can only pass if they are applied.
    const { m, config } = await manager(t, docker, image, {
      AIRLOCK_SANDBOX_MEMORY_MB: '384',
      AIRLOCK_SANDBOX_CPUS: '0.5',
      AIRLOCK_SANDBOX_PIDS: '100',
    });
    await m.poolReady();
    const r = await turn(m, 'harden', 'hello');
    t.equal(r.stop_reason, 'end_turn');
    const id = r.containerId!;
    const sup = (await m.inspect('harden')).supervisor!;
    const childPid = String(sup.child_pid);

    // /proc/net/dev: gVisor has no /sys/class/net.
    const net = await execIn(docker, id, ['/bin/sh', '-c', "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"]);
    t.same(net.stdout.trim().split(/\s+/), ['lo'], 'only the loopback interface');

    const status = await execIn(docker, id, ['/bin/cat', `/proc/${childPid}/status`]);
    const field = (k: string) => new RegExp(`^${k}:\\s*(.*)$`, 'm').exec(status.stdout)?.[1].trim();
    t.equal(field('Uid')?.split(/\s+/)[0], '1001', 'child real uid 1001');
    t.equal(field('Uid')?.split(/\s+/)[1], '1001', 'child effective uid 1001');
    t.equal(field('Gid')?.split(/\s+/)[0], '1001', 'child gid 1001');
    const groups = /^Groups:[ \t]*(.*)$/m.exec(status.stdout);
    t.ok(groups, 'the status has a Groups line');
    t.equal(groups?.[1].trim(), '', 'supplementary groups dropped in the child');
    t.equal(field('CapEff'), '0000000000000000', 'no effective capabilities in the child');
    t.equal(field('CapPrm'), '0000000000000000', 'no permitted capabilities in the child');
    if (RUNSC) {
      // gVisor's /proc/<pid>/status has no NoNewPrivs line; the engine hands it the OCI flag.
      const sec = (await docker.getContainer(id).inspect()).HostConfig.SecurityOpt ?? [];
      t.ok(
        sec.includes('no-new-privileges'),
        'no-new-privileges (runsc: set on the container; gVisor does not show it in status)',
      );
    } else t.equal(field('NoNewPrivs'), '1', 'no-new-privileges');

    const supStatus = await execIn(docker, id, [
      '/bin/sh',
      '-c',
      `cat /proc/$(cat /proc/${childPid}/status | sed -n 's/^PPid:\\s*//p')/status`,
    ]);
    t.match(supStatus.stdout, /^CapEff:\s*00000000000000c0$/m, 'supervisor holds only SETUID+SETGID');

    const ro = await execIn(docker, id, [
      '/bin/sh',
      '-c',
      'touch /opt/x 2>&1; touch /etc/x 2>&1; grep " / " /proc/mounts',
    ]);
    // gVisor checks the permission before the read-only mount: the agent's uid gets EACCES there.
    t.match(
      ro.stdout,
      RUNSC
        ? /(Read-only file system|Permission denied)[^]*(Read-only file system|Permission denied)/
        : /Read-only file system/,
      'root filesystem refuses writes',
    );
    t.match(ro.stdout, RUNSC ? / \/ 9p ro[, ]/ : / \/ overlay ro[, ]/, 'root mounted read-only');
    const asRoot = await execIn(docker, id, ['/bin/sh', '-c', 'touch /usr/x 2>&1 || true'], { user: '0' });
    t.match(asRoot.stdout, /Read-only file system/, 'even root cannot write the root filesystem');

    const ctl = await execIn(docker, id, [
      '/bin/sh',
      '-c',
      "find /run/airlock/control.sock /run/airlock/profile.json -printf \"%m %U\\n\"; node -e \"require('net').connect('/run/airlock/control.sock').on('error',e=>{console.log(e.code);process.exit(0)}).on('connect',()=>{console.log('CONNECTED');process.exit(0)})\"",
    ]);
    t.match(ctl.stdout, /^600 0$/m, 'control socket is root-only 0600');
    t.match(ctl.stdout, /^644 0$/m, 'profile.json is world-readable 0644');
    t.match(ctl.stdout, /EACCES/, 'the agent user cannot connect to the control socket');

    const ws = await execIn(docker, id, [
      '/bin/sh',
      '-c',
      'touch /workspace/.agent-attachments/probe && echo WROTE; touch /tmp/x && echo TMP',
    ]);
    t.match(ws.stdout, /WROTE/, 'the workspace is writable for the agent');
    t.match(ws.stdout, /TMP/, '/tmp is a writable tmpfs');

    // /tmp is noexec: the agent's uid can write an executable there but not run it.
    const noexec = await execIn(docker, id, [
      '/usr/local/bin/node',
      '-e',
      "const fs=require('fs'),cp=require('child_process');fs.copyFileSync('/bin/true','/tmp/exe');fs.chmodSync('/tmp/exe',0o755);" +
        "const run=(p)=>{try{cp.execFileSync(p);return 'RAN'}catch(e){return e.code}};console.log(JSON.stringify({tmp:run('/tmp/exe'),bin:run('/bin/true')}))",
    ]);
    t.same(
      JSON.parse(noexec.stdout),
      { tmp: 'EACCES', bin: 'RAN' },
      'a file written to /tmp cannot be executed (a system binary can)',
    );
    t.match(
      await execIn(docker, id, ['/bin/sh', '-c', 'grep " /tmp " /proc/mounts']).then((r) => r.stdout),
      /\bnoexec\b/,
      '/tmp mounted noexec',
    );

    // Memory, CPU and process limits: configured, set on the container, and in force inside it.
    const s = config.sandbox;
    // runc: the container's cgroup, read inside it. runsc: gVisor shows no cgroupfs inside; the
    // limits are on the sandbox's cgroup on the host (the pids one with room for gVisor's own
    // threads, hostPidsLimit).
    const cg = RUNSC
      ? {
          stdout: `${hostCgroup(id, 'memory', 'memory.limit_in_bytes')}|${hostCgroup(id, 'pids', 'pids.max')}|${hostCgroup(id, 'cpu', 'cpu.cfs_quota_us')} ${hostCgroup(id, 'cpu', 'cpu.cfs_period_us')}`,
        }
      : await execIn(docker, id, [
          '/bin/sh',
          '-c',
          'm=$(cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes); ' +
            'p=$(cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max); ' +
            'c=$(cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo "$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us)"); ' +
            'echo "$m|$p|$c"',
        ]);
    const [mem, pids, cpu] = cg.stdout.trim().split('|');
    t.equal(Number(mem), 384 * 1024 * 1024, 'memory limit in force inside (cgroup)');
    t.equal(
      Number(pids),
      hostPidsLimit(s),
      RUNSC
        ? 'process limit in force (host cgroup: 256 + 12 per allowed guest process)'
        : 'process limit in force inside (cgroup)',
    );
    const [quota, period] = cpu.split(' ').map(Number);
    t.equal(quota / period, 0.5, 'CPU limit in force inside (cgroup quota/period)');

    const c = await docker.getContainer(id).inspect();
    t.equal(c.HostConfig.NetworkMode, 'none');
    t.same(c.HostConfig.CapDrop, ['ALL']);
    t.same([...(c.HostConfig.CapAdd ?? [])].sort(), ['SETGID', 'SETUID']);
    t.equal(c.HostConfig.ReadonlyRootfs, true);
    t.equal(c.HostConfig.Init, true);
    t.equal(c.HostConfig.Memory, s.memoryMb * 1024 * 1024, 'HostConfig.Memory = AIRLOCK_SANDBOX_MEMORY_MB');
    t.equal(c.HostConfig.MemorySwap, s.memoryMb * 1024 * 1024, 'no swap beyond the memory limit');
    t.equal(c.HostConfig.NanoCpus, s.cpus * 1e9, 'HostConfig.NanoCpus = AIRLOCK_SANDBOX_CPUS');
    t.equal(
      c.HostConfig.PidsLimit,
      RUNSC ? 256 + 12 * s.pids : s.pids,
      RUNSC
        ? 'HostConfig.PidsLimit = 256 + 12 × AIRLOCK_SANDBOX_PIDS (runsc)'
        : 'HostConfig.PidsLimit = AIRLOCK_SANDBOX_PIDS',
    );
    t.equal((c.HostConfig as { Runtime?: string }).Runtime, SANDBOX_RUNTIME, `HostConfig.Runtime = ${SANDBOX_RUNTIME}`);
    t.same([s.memoryMb, s.cpus, s.pids], [384, 0.5, 100], 'the configured values');
    t.ok(c.Config.Labels['airlock.owner'], 'owner label');
  });

  if (RUNSC) {
    t.test('runsc: the pool is off, a new session cold-starts; start and reap metrics', async (t) => {
      const metrics = createMetrics();
      const clock = new TestClock();
      const { m } = await manager(
        t,
        docker,
        image,
        { AIRLOCK_POOL_SIZE: '1', AIRLOCK_SESSION_IDLE_S: '1' },
        { metrics, reapIntervalMs: 60_000, clock },
      );
      await m.poolReady();
      t.equal(
        m.poolActive,
        false,
        'the pool is off under runsc (a workspace bound at claim would not reach a gVisor sandbox)',
      );
      t.same(m.list(), [], 'no container waits');
      t.equal((await turn(m, 'cold', 'hi')).stop_reason, 'end_turn');
      t.equal((await m.inspect('cold')).fromPool, false, 'the session cold-started');
      const started = (await metrics.sessionsStarted.get()).values;
      t.same(
        started.map((v) => [v.labels.kind, v.value]),
        [['cold', 1]],
        'counted as a cold start',
      );
      clock.advance(1001);
      t.same(await m.reap(), ['cold']);
    });
  } else
    t.test('a new session takes the pre-started pool container; start and reap metrics', async (t) => {
      const metrics = createMetrics();
      const clock = new TestClock();
      const { m, dir, owner } = await manager(
        t,
        docker,
        image,
        { AIRLOCK_POOL_SIZE: '1', AIRLOCK_SESSION_IDLE_S: '1' },
        { metrics, reapIntervalMs: 60_000, clock },
      );
      await m.poolReady();
      const pooled = m.list().filter((s) => s.state === 'pool');
      t.equal(pooled.length, 1, 'one pool container waiting');
      const r = await turn(m, 'pooled', 'hi');
      t.equal(r.stop_reason, 'end_turn');
      t.equal(r.containerId, pooled[0].containerId, 'the session runs in the pool container');
      const info = await m.inspect('pooled');
      t.equal(info.fromPool, true);
      t.equal(
        info.container.labels && (info.container.labels as Record<string, string>)['airlock.pool'],
        '1',
        'it was created as a pool container',
      );
      t.match(pooled[0].containerName, /^airlock-pool-[a-f0-9]{16}$/, 'a waiting pool container is named as such');
      t.equal(
        info.container.name,
        `airlock-session-pooled-${pooled[0].slot}`,
        'renamed after its session at claim (labels cannot change)',
      );
      t.equal(m.list().find((s) => s.sessionId === 'pooled')?.containerName, info.container.name);
      // Labels are fixed at create, before the session is known: owner, slot and pool only. The
      // claim (session and user) is in the name and in the slot's claim.json, which adoption reads.
      t.same(
        airlockLabels(info.container.labels),
        {
          'airlock.owner': owner,
          'airlock.slot': pooled[0].slot,
          'airlock.pool': '1',
          'airlock.session': '',
          'airlock.user': '',
        },
        'a claimed pool container keeps its create-time labels: owner and slot, empty session and user',
      );
      const claimPath = join(dir, 'sandboxes', pooled[0].slot, 'claim.json');
      t.match(
        JSON.parse(readFileSync(claimPath, 'utf8')),
        { session_id: 'pooled', user_id: 7 },
        'claim.json records the session and user',
      );
      t.equal(statSync(claimPath).mode & 0o777, 0o600, 'claim.json is root-only');
      const started = (await metrics.sessionsStarted.get()).values;
      t.same(
        started.map((v) => [v.labels.kind, v.value]),
        [['pool', 1]],
        'counted as a pool start, no cold start',
      );
      let text = await metrics.registry.metrics();
      t.match(text, /^airlock_session_start_seconds_count\{kind="pool"\} 1$/m, 'start time observed with kind="pool"');
      t.notMatch(text, /airlock_session_start_seconds_count\{kind="cold"\}/, 'no cold start observed');
      clock.advance(1001);
      t.same(await m.reap(), ['pooled']);
      text = await metrics.registry.metrics();
      t.match(text, /^airlock_sessions_reaped_total\{reason="idle"\} 1$/m, 'the reap counted');
    });

  t.test('warm reuse: same container for one session, another for a new session', async (t) => {
    const { m } = await manager(t, docker, image);
    await m.poolReady();
    const a1 = await turn(m, 'warm-a', 'one');
    const a2 = await turn(m, 'warm-a', 'two');
    t.equal(a1.stop_reason, 'end_turn');
    t.equal(a2.stop_reason, 'end_turn');
    t.equal(a1.containerId, a2.containerId, 'two prompts, one container');
    t.match(textOf(a2.events), /message 2 of this conversation/, 'the same agent process kept its state');
    const b = await turn(m, 'warm-b', 'other');
    t.not(b.containerId, a1.containerId, 'a new session gets another container');
    t.match(
      (await m.inspect('warm-b')).container.name,
      /^airlock-session-warm-b-[a-f0-9]{16}$/,
      'named after its session',
    );

    // One turn at a time per session.
    const slow = turn(m, 'warm-a', 'three');
    await t.rejects(turn(m, 'warm-a', 'concurrent'), { code: 'ERR_SESSION_BUSY', status: 409 });
    t.equal((await slow).stop_reason, 'end_turn');
  });

  t.test('the sandbox processes run one-file bundles of their entry points (faster session start)', async (t) => {
    const { m } = await manager(t, docker, image, { AIRLOCK_POOL_SIZE: '0' });
    const r = await turn(m, 'bundled', 'hi');
    t.equal(r.stop_reason, 'end_turn', 'a turn runs on the bundles');
    // Every node process in the live session, with the file it runs and whether that file is a
    // bundle: our banner first (after a shebang), and no import of a relative module (the sources
    // are inlined). The agent starts from its V8 startup snapshot: the file it runs is the blob,
    // and the bundle checked is the one the blob was built from, beside it.
    const probe = `
      const fs = require('fs');
      const out = [];
      for (const pid of fs.readdirSync('/proc').filter((p) => /^[0-9]+$/.test(p))) {
        let argv;
        try { argv = fs.readFileSync('/proc/' + pid + '/cmdline', 'utf8').split(String.fromCharCode(0)); } catch { continue; }
        const file = argv.find((a) => a.startsWith('/opt/airlock/'));
        if (!argv[0].endsWith('/node') || !file) continue;
        const blob = file.endsWith('.blob');
        const source = blob ? file.replace(/[.]blob$/, '.cjs') : file;
        const read = (f) => { const s = fs.readFileSync(f, 'utf8'); return s.startsWith('#!') ? s.slice(s.indexOf(String.fromCharCode(10)) + 1) : s; };
        const esmBundle = (s) => s.startsWith('import { createRequire as __airlockCreateRequire }');
        const relative = (s) => /from ["'][.][.]?\\//.test(s) || /require[(]["'][.][.]?\\//.test(s);
        const src = read(source);
        // An entry that does its first act before loading the rest import()s one sibling bundle.
        const later = /import[(]"[.]\\/([a-z-]+[.]js)"[)]/.exec(src)?.[1] ?? null;
        const laterSrc = later ? read(source.replace(/[^/]+$/, later)) : '';
        out.push({
          file,
          snapshotFlag: argv.includes('--snapshot-blob'),
          banner: blob ? src.startsWith('var __airlockImportMetaUrl') : esmBundle(src),
          relativeImports: relative(src) || (later !== null && (!esmBundle(laterSrc) || relative(laterSrc) || /import[(]"[.]/.test(laterSrc))),
          later,
        });
      }
      console.log(JSON.stringify(out.sort((a, b) => a.file.localeCompare(b.file))));`;
    const res = await execIn(docker, r.containerId!, ['/usr/local/bin/node', '-e', probe], { user: '0' });
    t.equal(res.code, 0, 'probe ran', { stderr: res.stderr });
    const procs = JSON.parse(res.stdout) as {
      file: string;
      snapshotFlag: boolean;
      banner: boolean;
      relativeImports: boolean;
      later: string | null;
    }[];
    t.same(
      procs.map((p) => [p.file, p.snapshotFlag, p.later]),
      [
        ['/opt/airlock/dist/agent/snapshot.blob', true, null],
        ['/opt/airlock/dist/supervisor/snapshot.blob', true, null],
      ],
      'supervisor (the image ENTRYPOINT, from its startup snapshot) and agent child (hosting both MCP servers, started from its snapshot) are running',
    );
    for (const p of procs)
      t.same(
        [p.banner, p.relativeImports],
        [true, false],
        `${p.file} is (built from) a bundle, and so is what it loads later`,
      );
    // The start's figures in the container log (docs/runtime.md, step 10).
    const log = (
      await docker.getContainer(r.containerId!).logs({ stdout: true, stderr: true, follow: false })
    ).toString('latin1');
    // (Each line comes behind the engine's 8-byte frame header, whose length bytes may be a '{'.)
    const line = (msg: string) =>
      log
        .split('\n')
        .map((l) => l.slice(Math.max(0, l.search(/\{"[a-z_]+":/))))
        .map((l) => {
          try {
            return JSON.parse(l) as Record<string, unknown>;
          } catch {
            return {};
          }
        })
        .find((o) => o.msg === msg);
    const ready = line('ready');
    t.ok(
      ready && Number(ready.agent_launched_ms) > 0 && Number(ready.uptime_ms) >= Number(ready.agent_launched_ms),
      "the supervisor's ready line: ms to the agent's launch and to ready",
      { ready },
    );
    t.ok(Number(line('agent ready (idle)')?.uptime_ms) > 0, "the agent's ready line: its uptime");
  });

  t.test('a failed start is cleaned up and the turn resolves with an error', async (t) => {
    const owner = uniqueOwner('fail');
    const dir = dataDir(t);
    t.teardown(() => sweep(docker, owner));
    const m = new SessionManager({
      config: runtimeConfig(dir, 'airlock/no-such-image:none', { AIRLOCK_POOL_SIZE: '0' }),
      docker,
      log: createLogger({ level: 'silent' }),
      owner,
    });
    t.teardown(() => m.close({ removeContainers: true }));
    await m.start();
    const r = await turn(m, 'doomed', 'x');
    t.equal(r.stop_reason, 'error');
    t.equal(r.error?.code, 'ERR_SANDBOX_START');
    const left = await docker.listContainers({ all: true, filters: { label: [`airlock.owner=${owner}`] } });
    t.equal(left.length, 0, 'no container left behind');
    t.same(readdirSync(join(dir, 'sandboxes')), [], 'no session folder left behind');
    t.same(m.list(), []);
  });

  t.test('at start the manager removes its orphans and stray folders, and leaves other owners alone', async (t) => {
    const owner = uniqueOwner('orphan');
    const other = uniqueOwner('other');
    const dir = dataDir(t);
    t.teardown(() => sweep(docker, owner));
    t.teardown(() => sweep(docker, other));
    const make = (labels: Record<string, string>, cmd: string[]) =>
      docker.createContainer({
        Image: image,
        Labels: labels,
        Entrypoint: cmd,
        NetworkDisabled: true,
        HostConfig: { NetworkMode: 'none', Init: true },
      });
    // Ours, stopped, no session: never started.
    const stopped = await make({ 'airlock.owner': owner }, ['/bin/true']);
    // Ours, running, with a slot and its folder, but no supervisor answering (no control socket).
    const slot = randomBytes(8).toString('hex');
    mkdirSync(join(dir, 'sandboxes', slot, 'run'), { recursive: true });
    const running = await make(
      { 'airlock.owner': owner, 'airlock.slot': slot, 'airlock.session': '', 'airlock.user': '' },
      ['/bin/sleep', '300'],
    );
    await running.start();
    // A slot folder with no container at all.
    const stray = randomBytes(8).toString('hex');
    mkdirSync(join(dir, 'sandboxes', stray, 'run'), { recursive: true });
    // Another daemon's container (another data dir): not ours to touch.
    const foreign = await make({ 'airlock.owner': other }, ['/bin/true']);

    const m = new SessionManager({ config: runtimeConfig(dir, image, { AIRLOCK_POOL_SIZE: '0' }), docker, log, owner });
    t.teardown(() => m.close({ removeContainers: true }));
    await m.start();
    await t.rejects(stopped.inspect(), { statusCode: 404 } as unknown as Error, 'the stopped orphan is removed');
    await t.rejects(
      running.inspect(),
      { statusCode: 404 } as unknown as Error,
      'the running container without a live supervisor is removed',
    );
    t.notOk(existsSync(join(dir, 'sandboxes', slot)), 'its slot folder is removed');
    t.notOk(existsSync(join(dir, 'sandboxes', stray)), 'a slot folder without a container is removed');
    t.same(readdirSync(join(dir, 'sandboxes')), [], 'nothing left in the sandboxes folder');
    t.equal((await foreign.inspect()).Config.Labels['airlock.owner'], other, "another owner's container is left alone");
    t.same(m.list(), [], 'nothing adopted');
  });

  t.test('capacity limit answers ERR_SESSION_CAPACITY', async (t) => {
    const { m, owner } = await manager(t, docker, image, { AIRLOCK_MAX_SESSIONS: '1', AIRLOCK_POOL_SIZE: '0' });
    const first = await turn(m, 'cap-1', 'x');
    t.equal(first.stop_reason, 'end_turn');
    // No pool: a cold start, whose labels name the session and user from create on.
    const c = await docker.getContainer(first.containerId!).inspect();
    t.same(
      airlockLabels(c.Config.Labels),
      { 'airlock.owner': owner, 'airlock.slot': m.list()[0].slot, 'airlock.session': 'cap-1', 'airlock.user': '7' },
      'a cold-started container is labelled with its owner, slot, session and user (no pool label)',
    );
    // Another user: the host's cap refuses (the same user's idle sandbox would make room under
    // the per-user cap instead, test/docker/session-cap.test.ts).
    await t.rejects(turn(m, 'cap-2', 'y', 8), { code: 'ERR_SESSION_CAPACITY', status: 503 });
    t.same(
      m.list().map((s) => s.sessionId),
      ['cap-1'],
      "the first user's sandbox stays",
    );
  });
}
