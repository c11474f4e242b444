/**
 * Ready pool members, with real containers: a pool container runs the supervisor, the agent child
 * and both MCP servers before any claim; a claim binds the workspace and hands the user's parts
 * over the control socket and starts no process; tools reach an upstream only through the routes
 * of an account that has a token (the real token never in the child); a claimed member never goes
 * back to the pool; a member whose agent or MCP server died while idle is replaced and never
 * handed out; a claim that fails half-way leaves nothing bound and the session starts in the next
 * member or cold, with one log line.
 */
import t from 'tap';
import { existsSync, readFileSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type Docker from 'dockerode';
import { createLogger } from '../../core/index.js';
import type { AgentEvent, PreparedSession, SessionPreparer } from '../../core/sandbox-protocol.js';
import { SessionManager } from '../../daemon/runtime/session-manager.js';
import { EgressGatewayService, egressTarget } from '../../daemon/host/egress.js';
import { buildRoutes } from '../../daemon/host/overlay.js';
import { start as startUpstream, type FakeUpstream } from '../../emulator/fake-upstream.js';
import { logSink } from '../helpers/app.js';
import { waitFor } from '../helpers/chat.js';
import { dataDir, dockerOrSkip, ensureTestImage, execIn, runtimeConfig, sweep, uniqueOwner } from './helpers.js';

const docker = await dockerOrSkip(t as unknown as Parameters<typeof dockerOrSkip>[0]);

const WITH_ACCOUNT = 21;
const NO_ACCOUNT = 22;
const REAL_TOKEN = `ya29.real-${randomBytes(12).toString('hex')}`;
const MAIL_PROMPT = 'chart 3 5 8 and email the chart to ann@example.test';

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

/** Routes only for the user who has an account token (as the overlay does). */
function preparer(upstream: FakeUpstream): SessionPreparer {
  return {
    async prepare({ userId }): Promise<PreparedSession> {
      const hasAccount = userId === WITH_ACCOUNT;
      const routes = buildRoutes({
        google: { mailBaseUrl: upstream.url, sheetsBaseUrl: upstream.url, driveBaseUrl: upstream.url },
        model: { provider: 'demo', baseUrl: '' },
        hasAccountToken: hasAccount,
        hasModelKey: false,
      });
      const ph = (n: string) => `ph-${n}-${randomBytes(8).toString('hex')}`;
      return {
        routes,
        tokens: hasAccount
          ? { MAIL_ACCESS_TOKEN: REAL_TOKEN, SHEETS_ACCESS_TOKEN: REAL_TOKEN, SEARCH_ACCESS_TOKEN: REAL_TOKEN }
          : {},
        placeholders: hasAccount
          ? { MAIL_API_KEY: ph('mail'), SHEETS_API_KEY: ph('sheets'), SEARCH_SHEETS_API_KEY: ph('search') }
          : {},
        agentEnv: { AGENT_MODEL_PROVIDER: 'demo', MAIL_FROM: 'me@example.test' },
        egressAllow: [...new Set(routes.map((r) => egressTarget(r.upstream)))],
      };
    },
  };
}

/** pid → entry file of every node process in the container (as root, which reads every cmdline). */
async function nodeProcs(docker: Docker, id: string): Promise<Record<string, string>> {
  const probe = `const fs=require('fs');const o={};for(const p of fs.readdirSync('/proc').filter((p)=>/^[0-9]+$/.test(p))){let a;try{a=fs.readFileSync('/proc/'+p+'/cmdline','utf8').split(String.fromCharCode(0))}catch{continue}const f=a.find((x)=>x.startsWith('/opt/airlock/'));if(a[0].endsWith('/node')&&f)o[p]=f.split('/').slice(-2,-1)[0]}console.log(JSON.stringify(o))`;
  const r = await execIn(docker, id, ['/usr/local/bin/node', '-e', probe], { user: '0' });
  return JSON.parse(r.stdout) as Record<string, string>;
}

async function gone(docker: Docker, id: string): Promise<boolean> {
  return docker
    .getContainer(id)
    .inspect()
    .then(() => false)
    .catch((err: { statusCode?: number }) => err.statusCode === 404);
}

if (docker) {
  const image = await ensureTestImage(docker);

  async function setup(tt: { teardown(fn: () => unknown): void }, poolSize: number) {
    const upstream = await startUpstream();
    tt.teardown(() => upstream.close());
    const owner = uniqueOwner('ready');
    const dir = dataDir(tt);
    tt.teardown(() => sweep(docker!, owner));
    const egress = new EgressGatewayService({ log: createLogger({ level: 'warn', destination: process.stderr }) });
    tt.teardown(() => egress.close());
    const sink = logSink();
    const log = createLogger({ level: 'info', destination: sink.stream });
    const m = new SessionManager({
      config: runtimeConfig(dir, image, { AIRLOCK_POOL_SIZE: String(poolSize) }),
      docker: docker!,
      log,
      owner,
      preparer: preparer(upstream),
      egress,
    });
    tt.teardown(() => m.close({ removeContainers: true }));
    await m.start();
    await m.poolReady(60_000);
    const members = () => m.list().filter((s) => s.state === 'pool');
    return { m, dir, upstream, sink, members };
  }

  t.test('a pool member answers before its claim; the claim starts nothing and the member never returns', async (t) => {
    const { m, dir, upstream, members } = await setup(t, 1);
    const [member] = members();
    const before = await nodeProcs(docker, member.containerId);
    t.same(
      Object.values(before).sort(),
      ['agent', 'supervisor'],
      'supervisor and agent child run in the waiting member (the agent hosts both MCP servers)',
    );
    const idle = (await m.inspect(member.containerId)).supervisor!;
    t.match(
      idle,
      { state: 'hello', session_id: null, agent_ready: true },
      'its supervisor reports the agent ready, no session',
    );

    // A user with an account: the claim hands over routes, placeholders and tokens; the tools use them.
    const r = await turn(m, 'acct', WITH_ACCOUNT, MAIL_PROMPT);
    t.equal(r.stop_reason, 'end_turn');
    t.equal(r.containerId, member.containerId, 'the session runs in the member that waited');
    t.same(await nodeProcs(docker, member.containerId), before, 'the claim started no process: the same pids');
    t.equal((await m.inspect('acct')).supervisor!.child_pid, idle.child_pid, 'the agent child is the one that waited');
    const sent = r.events.find((e) => e.type === 'tool_end' && e.tool === 'send_email');
    t.match(sent, { ok: true }, 'send_email worked through the routes handed over at claim', { sent });
    const mail = upstream.requests.filter((q) => q.path === '/gmail/v1/users/me/messages/send');
    t.equal(mail.length, 1, 'the upstream got the mail');
    t.equal(mail[0].headers.authorization, `Bearer ${REAL_TOKEN}`, 'with the real token, injected by the proxy');
    const childEnv = await execIn(docker, member.containerId, [
      '/bin/sh',
      '-c',
      `tr '\\0' '\\n' < /proc/${idle.child_pid}/environ`,
    ]);
    t.notMatch(childEnv.stdout, REAL_TOKEN, 'the child env never holds the real token');
    t.notMatch(JSON.stringify(r.events), REAL_TOKEN, 'nor does anything the turn returned');

    // The claimed member is no pool member any more; the pool refilled with another container.
    await m.poolReady(60_000);
    t.notOk(
      members().some((s) => s.containerId === member.containerId),
      'the claimed member is not in the pool',
    );

    // A user without an account: no route, and the tools say so.
    const upstreamBefore = upstream.requests.length;
    const next = members()[0];
    const n = await turn(m, 'noacct', NO_ACCOUNT, MAIL_PROMPT);
    t.equal(n.containerId, next.containerId, 'the next session claims the next member');
    const refused = n.events.find((e) => e.type === 'tool_end' && e.tool === 'send_email');
    t.match(refused, { ok: false, error: /ERR_TOOL_NOT_CONNECTED/ }, 'send_email answers "connect your account"');
    t.equal(upstream.requests.length, upstreamBefore, 'nothing reached the upstream');
    const profile = JSON.parse(readFileSync(join(dir, 'sandboxes', next.slot, 'run', 'profile.json'), 'utf8')) as {
      routes: unknown[];
    };
    t.same(profile.routes, [], 'profile.json has no route for a user without a token');

    // Ended sessions take their container with them; it never comes back as a member.
    await m.kill('acct');
    t.ok(await gone(docker, member.containerId), 'the ended session container is removed');
    await m.poolReady(60_000);
    t.notOk(
      members().some((s) => s.containerId === member.containerId || s.containerId === next.containerId),
      'no claimed container in the pool',
    );
  });

  // (An MCP server hosted in the agent dies with it; one started as a process of its own makes the
  // idle agent exit: test/integration/agent-idle.test.ts.)
  t.test('a member whose agent died while idle is replaced, never handed out', async (t) => {
    const { m, members } = await setup(t, 1);
    for (const victim of ['agent'] as const) {
      const [member] = members();
      const procs = await nodeProcs(docker, member.containerId);
      const pid = Object.keys(procs).find((p) => procs[p] === victim)!;
      t.ok(pid, `${victim} runs in the member`);
      // As the agent's uid (root in the sandbox holds no CAP_KILL over another uid's processes).
      const k = await execIn(docker, member.containerId, ['/bin/sh', '-c', `kill -9 ${pid}`]);
      t.equal(k.code, 0, `${victim} killed ${k.stderr}`);
      await waitFor(
        () => !members().some((s) => s.containerId === member.containerId),
        `the member with a dead ${victim} leaves the pool`,
      );
      t.ok(
        await waitFor(() => gone(docker, member.containerId), 'its container to be removed'),
        `the member whose ${victim} died is removed`,
      );
      await m.poolReady(60_000);
      const r = await turn(m, `after-${victim}`, NO_ACCOUNT, 'chart 1 2 3');
      t.equal(r.stop_reason, 'end_turn', 'the next session works');
      t.not(r.containerId, member.containerId, 'in another container');
      t.match(
        r.events.find((e) => e.type === 'tool_end'),
        { tool: 'render_chart', ok: true },
        'with its tools',
      );
      await m.poolReady(60_000);
    }
  });

  t.test(
    'a claim that fails half-way leaves nothing bound; the next member, or a cold start, takes the session',
    async (t) => {
      for (const poolSize of [2, 1]) {
        const { m, dir, sink, members } = await setup(t, poolSize);
        const [broken] = members();
        // A real fault: the member's workspace mount point is gone, so binding the user's workspace fails.
        rmdirSync(join(dir, 'sandboxes', broken.slot, 'workspace'));
        const others = members()
          .slice(1)
          .map((s) => s.containerId);
        const r = await turn(m, `half-${poolSize}`, WITH_ACCOUNT, 'hello');
        t.equal(r.stop_reason, 'end_turn', `pool ${poolSize}: the user gets a working session`);
        t.not(r.containerId, broken.containerId, 'not in the broken member');
        const info = await m.inspect(`half-${poolSize}`);
        if (poolSize === 2) t.same([info.containerId, info.fromPool], [others[0], true], 'the next member took it');
        else t.equal(info.fromPool, false, 'the only member failed: a cold start took it');
        const lines = sink.lines
          .map((l) => JSON.parse(l) as { msg: string; containerId?: string; code?: string })
          .filter((l) => l.msg.startsWith('pool claim failed'));
        t.equal(lines.length, 1, 'one log line says why');
        t.match(lines[0], { containerId: broken.containerId.slice(0, 12), code: 'ERR_SANDBOX_START' });
        t.ok(await gone(docker, broken.containerId), 'the broken member is removed');
        t.notOk(existsSync(join(dir, 'sandboxes', broken.slot)), 'its slot folder (and any claim.json) is gone');
        const mounts = readFileSync('/proc/self/mountinfo', 'utf8');
        t.notOk(mounts.includes(broken.slot), 'nothing is mounted under its slot');
        t.notOk(
          m.list().some((s) => s.containerId === broken.containerId),
          'it is neither a session nor a member',
        );
      }
    },
  );
}
