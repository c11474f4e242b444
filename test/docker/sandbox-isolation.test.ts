/**
 * Real-engine tests of what a sandbox's agent can reach: token isolation with a canary (and the
 * negative check that the scan would catch a child running under the supervisor's uid), stray
 * processes of the agent uid ending with the turn, and nothing written to /workspace or
 * /run/airlock running. The hardening and lifecycle are in sandbox.test.ts.
 */
import t from 'tap';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { createLogger } from '../../core/index.js';
import type { PreparedSession, SessionPreparer } from '../../core/sandbox-protocol.js';
import { EgressGatewayService } from '../../daemon/host/egress.js';
import { TokenService } from '../../daemon/host/tokens.js';
import type { SessionLiveInfo } from '../../daemon/runtime/sessions.js';
import {
  dockerOrSkip,
  ensureTestImage,
  execIn,
  GLIBC_TUNABLE_LINES,
  plantAndScan,
  SANDBOX_RUNTIME,
  SECRET_SCAN,
} from './helpers.js';
import { manager, turn } from './sandbox-kit.js';

const RUNSC = SANDBOX_RUNTIME === 'runsc';

const docker = await dockerOrSkip(t as unknown as Parameters<typeof dockerOrSkip>[0]);

if (docker) {
  const image = await ensureTestImage(docker);

  const CANARY = `canary-${randomBytes(16).toString('hex')}`;
  const canaryPreparer: SessionPreparer = {
    async prepare({ proxyPort }): Promise<PreparedSession> {
      return {
        routes: [
          {
            name: 'mail',
            prefix: '/mail',
            allow: [{ method: 'POST', path: '/mail/v1/users/me/messages/send' }],
            upstream: 'http://127.0.0.1:9',
            rewrite: { from: '/mail/v1/', to: '/gmail/v1/' },
            placeholder_env: 'MAIL_API_KEY',
            token_ref: '${MAIL_ACCESS_TOKEN}',
            base_url_env: 'MAIL_BASE_URL',
          },
        ],
        tokens: { MAIL_ACCESS_TOKEN: CANARY },
        placeholders: { MAIL_API_KEY: `placeholder-${proxyPort}` },
        agentEnv: { AIRLOCK_MODEL_PROVIDER: 'demo' },
        egressAllow: [],
      };
    },
  };

  async function scan(id: string, uid: string) {
    const r = await execIn(docker!, id, ['/usr/local/bin/node', '-e', SECRET_SCAN], {
      user: uid,
      env: [`NEEDLE_HEX=${Buffer.from(CANARY).toString('hex')}`],
    });
    return JSON.parse(r.stdout) as { hits: string[]; checked: Record<string, number> };
  }

  t.test('token isolation: the canary is nowhere the child can look', async (t) => {
    for (const pool of ['1', '0']) {
      // The egress gateway (host) holds the canary and takes its rotation.
      const egress = new EgressGatewayService({ log: createLogger({ level: 'silent' }) });
      t.teardown(() => egress.close());
      // The lifecycle hook hands the token service the session's gateway, as serve's does.
      const live = new Map<string, SessionLiveInfo>();
      const { m, dir } = await manager(
        t,
        docker,
        image,
        { AIRLOCK_POOL_SIZE: pool },
        { preparer: canaryPreparer, egress, hooks: { onSessionLive: (s) => void live.set(s.sessionId, s) } },
      );
      await m.poolReady();
      const r = await turn(m, `canary-${pool}`, 'hi');
      t.equal(r.stop_reason, 'end_turn');
      const id = r.containerId!;
      const sup = (await m.inspect(`canary-${pool}`)).supervisor!;
      const status = await execIn(docker, id, ['/bin/cat', `/proc/${sup.child_pid}/status`]);
      const childUid = /^Uid:\s*(\d+)/m.exec(status.stdout)![1];
      t.equal(childUid, '1001');
      // The child's own environment: spawned before its session (idle), it holds nothing of any
      // user; placeholder and base URL reach it over stdin (`configure`), the real token never.
      const env = await execIn(docker, id, ['/bin/sh', '-c', `tr '\\0' '\\n' < /proc/${sup.child_pid}/environ`], {
        user: childUid,
      });
      t.same(
        env.stdout
          .split('\n')
          .filter((l) => l && !GLIBC_TUNABLE_LINES.has(l))
          .map((l) => l.split('=')[0])
          .sort(),
        ['GLIBC_TUNABLES', 'HOME', 'LANG', 'NODE_COMPILE_CACHE', 'PATH'],
        'child env: HOME, LANG, PATH, the malloc settings and the image compile cache folder only',
      );
      t.notMatch(env.stdout, /MAIL_ACCESS_TOKEN/, 'child env does not name the real token');
      t.notMatch(env.stdout, new RegExp(CANARY), 'child env does not hold the canary');
      // Everything the child's uid can read.
      const s = await scan(id, childUid);
      t.same(s.hits, [], `canary not found (pool=${pool}): ${JSON.stringify(s.checked)}`);
      if (RUNSC) {
        // gVisor refuses /proc/<pid>/mem of another process even to the same uid (EACCES).
        t.ok(
          s.checked.environ > 0 &&
            s.checked.cmdline > 0 &&
            s.checked.files > 0 &&
            s.checked.mem === 0 &&
            s.checked.denied > 0,
          'the scan looked at environ, cmdline and files; no process memory is readable (runsc)',
        );
      } else
        t.ok(
          s.checked.environ > 0 && s.checked.cmdline > 0 && s.checked.files > 0 && s.checked.mem > 0,
          'the scan looked at environ, cmdline, memory and files',
        );
      // The profile on the host and in the sandbox holds only the reference.
      const runDir = readdirSync(join(dir, 'sandboxes')).map((d) => join(dir, 'sandboxes', d, 'run', 'profile.json'));
      const profile = runDir
        .map((p) => {
          try {
            return readFileSync(p, 'utf8');
          } catch {
            return '';
          }
        })
        .join('');
      t.match(profile, /\$\{MAIL_ACCESS_TOKEN\}/, 'profile names the token by reference');
      t.notMatch(profile, new RegExp(CANARY), 'profile.json does not hold the canary');
      // claim.json (what a restarted daemon adopts from): token names for rotation, no value, root only.
      const claimFile = readdirSync(join(dir, 'sandboxes'))
        .map((d) => join(dir, 'sandboxes', d, 'claim.json'))
        .find((p) => existsSync(p))!;
      t.equal(statSync(claimFile).mode & 0o777, 0o600, 'claim.json is 0600');
      const claim = readFileSync(claimFile, 'utf8');
      t.same(JSON.parse(claim).token_envs, ['MAIL_ACCESS_TOKEN'], 'claim.json names the token env');
      t.notMatch(claim, new RegExp(CANARY), 'claim.json does not hold the canary');
      const inspect = JSON.stringify(await docker.getContainer(id).inspect());
      t.notMatch(inspect, new RegExp(CANARY), 'docker inspect does not show the canary');
      t.notMatch(
        JSON.stringify(await m.inspect(`canary-${pool}`)),
        new RegExp(CANARY),
        'sessions inspect does not show the canary',
      );
      // Rotation replaces the token in the egress gateway on the host: nothing enters the sandbox,
      // not even for root (the supervisor holds no token).
      const ROTATED = `${CANARY}-rotated`;
      const tokens = new TokenService({
        store: {
          tokens: async () => ({ accessToken: CANARY, accessExpiresAt: 0, refreshToken: 'refresh' }),
          saveAccess: async () => undefined,
        },
        refresh: async () => ({ access_token: ROTATED, expires_in: 3600, token_type: 'Bearer' }),
        log: createLogger({ level: 'silent' }),
      });
      const l = live.get(`canary-${pool}`)!;
      t.ok(l.egress, 'the live session names its egress gateway');
      tokens.track(l.sessionId, l.userId, l.tokenEnvs, l.egress!);
      await tokens.refresh(l.userId);
      const s2 = await scan(id, childUid);
      t.same(s2.hits, [], 'rotated token not visible either');
      const s3 = await scan(id, '0');
      t.same(s3.hits, [], 'nor to root in the container: no real token is in the sandbox at all');
    }
  });

  t.test('negative check: the scan finds a canary a process of the sandbox does hold', async (t) => {
    // The supervisor holds no token any more (the gateway on the host does), so the old negative
    // check (a child under the supervisor's uid reads its memory) has nothing to find. The scan's
    // power is shown on a canary planted in a process of the child's uid instead.
    const { m } = await manager(
      t,
      docker,
      image,
      { AIRLOCK_POOL_SIZE: '0' },
      { preparer: canaryPreparer, childUid: 0 },
    );
    const r = await turn(m, 'canary-neg', 'hi');
    t.equal(r.stop_reason, 'end_turn');
    const s = await scan(r.containerId!, '0');
    t.same(s.hits, [], 'even with the child under the supervisor uid, there is no token to leak');
    const planted = await plantAndScan(docker!, r.containerId!, '1001', CANARY);
    t.ok(
      planted.hits.some((h) => h.endsWith('/environ')),
      `the scan catches a canary in a process environment (${planted.hits.join(', ')})`,
    );
    // gVisor refuses /proc/<pid>/mem of another process even to the same uid (EACCES).
    if (!RUNSC)
      t.ok(
        planted.hits.includes(`${planted.plantPid}/mem`),
        `the scan catches a canary in the resident memory of a process's heap (${planted.hits.join(', ')})`,
      );
  });

  t.test(
    'processes of the agent uid a turn left behind end with the turn; the agent child and an exec from outside stay',
    async (t) => {
      const { m } = await manager(t, docker, image, { AIRLOCK_POOL_SIZE: '0' });
      const first = await turn(m, 'strays', 'hello');
      t.equal(first.stop_reason, 'end_turn');
      const id = first.containerId!;
      const childPid = (await m.inspect('strays')).supervisor!.child_pid;
      // As a tool's shell would: a background process whose shell then exits (reparented to init).
      const bg = await execIn(docker, id, ['/bin/sh', '-c', 'sleep 1000 >/dev/null 2>&1 & echo $!'], { user: '1001' });
      const orphan = Number(bg.stdout.trim());
      t.ok(orphan > 1, `a background process of uid 1001 (pid ${orphan})`);
      // As an operator's attach shell: started from outside the container, still running.
      const op = await docker.getContainer(id).exec({ Cmd: ['/bin/sleep', '1001'], User: '1001' });
      // A detached start still answers with a stream: close it, or its socket keeps this process alive.
      const started = (await op.start({ Detach: true })) as unknown as { destroy?: () => void } | undefined;
      started?.destroy?.();
      const procs = async () =>
        (
          await execIn(
            docker,
            id,
            [
              '/bin/sh',
              '-c',
              'for p in /proc/[0-9]*; do s=$(grep -E "^State:" $p/status 2>/dev/null | cut -f2 | cut -c1); echo "$(basename $p) $s $(cat $p/cmdline 2>/dev/null | tr "\\0" " ")"; done',
            ],
            { user: '0' },
          )
        ).stdout;
      const alive = (list: string, pid: number) =>
        list.split('\n').some((l) => l.startsWith(`${pid} `) && !l.startsWith(`${pid} Z`));
      const opPid = () =>
        procs().then((l) =>
          Number(
            l
              .split('\n')
              .find((x) => /sleep 1001 $/.test(x))
              ?.split(' ')[0] ?? 0,
          ),
        );
      t.ok(alive(await procs(), orphan), 'the background process runs before the next turn');
      let kept = 0;
      for (let i = 0; i < 100 && !kept; i++) kept = await opPid(); // the detached exec starts on its own time

      t.ok(kept > 0, 'and so does the exec from outside');

      const second = await turn(m, 'strays', 'again');
      t.equal(second.stop_reason, 'end_turn');
      const after = await procs();
      t.notOk(alive(after, orphan), 'the background process ended with the turn (gone before turn_end)');
      t.ok(alive(after, kept), 'an exec from outside (an operator shell) is left alone');
      t.equal((await m.inspect('strays')).supervisor!.child_pid, childPid, 'the agent child is the same process');
      t.ok(alive(after, Number(childPid)), 'and alive');
    },
  );

  t.test('/workspace and /run/airlock: nothing written there runs, under runc and runsc', async (t) => {
    const { m } = await manager(t, docker, image);
    await m.poolReady();
    const r = await turn(m, 'noexec', 'hello');
    t.equal(r.stop_reason, 'end_turn');
    const id = r.containerId!;
    // A program copied into each mount: a system binary runs, the copy does not (runc: EACCES,
    // 126; runsc: the gofer's host file cannot be mapped for execution, the exec fails too).
    const tryRun = (dir: string, user: string) =>
      execIn(
        docker,
        id,
        [
          '/bin/sh',
          '-c',
          `cp /bin/true ${dir}/airlock-x && chmod 755 ${dir}/airlock-x && { ${dir}/airlock-x; echo "copy=$?"; }; rm -f ${dir}/airlock-x; /bin/true; echo "bin=$?"`,
        ],
        { user },
      );
    for (const [dir, user] of [
      ['/workspace', '1001'],
      ['/run/airlock', '0'],
    ] as const) {
      const out = (await tryRun(dir, user)).stdout;
      t.match(out, /bin=0/, `${dir}: a system binary runs (as uid ${user})`);
      const code = Number(/copy=(\d+)/.exec(out)?.[1] ?? 0);
      t.not(code, 0, `${dir}: a program written there does not run (exit ${code}, as uid ${user})`);
    }
    const mounts = (
      await execIn(docker, id, ['/bin/sh', '-c', 'grep -E " (/workspace|/run/airlock) " /proc/mounts'])
    ).stdout
      .trim()
      .split('\n');
    if (RUNSC) {
      // gVisor lists its gofer mounts without flags; the host mounts under them carry them.
      t.comment(`runsc /proc/mounts: ${mounts.join(' | ')}`);
    } else {
      // The mount on top of each path (a pool member's /workspace has the slot below the user's).
      for (const dir of ['/workspace', '/run/airlock']) {
        const top = mounts.filter((l) => l.split(' ')[1] === dir).at(-1) ?? '';
        for (const flag of ['noexec', 'nosuid', 'nodev'])
          t.match(top.split(' ')[3], new RegExp(`\\b${flag}\\b`), `${dir} mounted ${flag}`);
      }
    }
  });
}
