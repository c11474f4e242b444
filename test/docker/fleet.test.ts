/**
 * A fleet with real processes: two `airlock serve` nodes on this machine, one PostgreSQL, one
 * Docker engine (each node its own owner label). A user's first prompt through node A and the
 * second through node B run in the same container with the same history (B forwards to A, the
 * owner); A killed with SIGKILL: once its heartbeat is stale, the next prompt through B gets a
 * new sandbox on B, the history intact and the lost-sandbox notice shown; A started again
 * removes its orphaned container instead of adopting it. Operators on B inspect, read the logs of
 * and attach to (piped and on a terminal) the session A owns.
 */
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { LABEL_OWNER } from '../../daemon/runtime/session-manager.js';
import { streamTurn, waitFor } from '../helpers/chat.js';
import { Client } from '../helpers/client.js';
import { freePort } from '../helpers/app.js';
import { postgresForTest } from '../helpers/db.js';
import { atRestEncryptor, loadConfig } from '../../core/index.js';
import { openDatabase } from '../../domain/db/index.js';
import { saveConnection } from '../../domain/identity/index.js';
import {
  attachOnPty,
  dataDir,
  dockerOrSkip,
  ensureTestImage,
  ROOT,
  runCli,
  sweep,
  uniqueOwner,
  ENGINE_ENV,
} from './helpers.js';

const docker = await dockerOrSkip(t as unknown as Parameters<typeof dockerOrSkip>[0]);
const CLI = join(ROOT, 'dist', 'daemon', 'main.js');
const said = (events: { type: string; text?: string }[]) =>
  events
    .filter((e) => e.type === 'text_delta')
    .map((e) => e.text)
    .join('');

interface Node {
  id: string;
  url: string;
  env: Record<string, string>;
  owner: string;
  proc?: ChildProcess;
  out: string;
}

if (docker) {
  const image = await ensureTestImage(docker);

  t.test('two nodes, one database: forwarding to the owner, a lost node taken over, its orphan removed', async (t) => {
    const dbUrl = await postgresForTest(t);
    if (!dbUrl) return;
    const shared = {
      AIRLOCK_DATABASE_URL: dbUrl,
      AIRLOCK_NODE_SECRET: randomBytes(24).toString('hex'),
      AIRLOCK_FLEET_ALLOW_HTTP: 'true',
      AIRLOCK_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
      AGENT_USER_TOKEN_SECRET: 'fleet-agent-user-token-secret-0123',
      MCP_INTERNAL_SECRET: 'fleet-mcp-internal-secret-0123456789',
      AIRLOCK_IMAGE: image,
      ...ENGINE_ENV,
      AIRLOCK_MODEL_PROVIDER: 'demo',
      AIRLOCK_POOL_SIZE: '0',
      AIRLOCK_NODE_HEARTBEAT_S: '1',
      AIRLOCK_NODE_LOST_S: '4',
      AIRLOCK_LOG_LEVEL: 'info',
    };
    const nodes: Node[] = [];
    for (const id of ['node-a', 'node-b']) {
      const dir = dataDir(t);
      const owner = uniqueOwner(`fleet-${id}`);
      writeFileSync(join(dir, 'runtime-owner'), owner + '\n', { mode: 0o600 });
      t.teardown(() => sweep(docker as Docker, owner));
      const port = await freePort();
      const url = `http://127.0.0.1:${port}`;
      nodes.push({
        id,
        url,
        owner,
        out: '',
        env: {
          ...shared,
          AIRLOCK_DATA_DIR: dir,
          AIRLOCK_PORT: String(port),
          AIRLOCK_NODE_ID: id,
          AIRLOCK_NODE_URL: url,
        },
      });
    }
    const [a, b] = nodes;
    t.teardown(() => {
      for (const n of nodes)
        if (n.proc && n.proc.exitCode === null && n.proc.signalCode === null) n.proc.kill('SIGKILL');
    });
    const start = async (n: Node) => {
      n.out = '';
      const p = spawn(process.execPath, [CLI, 'serve'], {
        env: { PATH: process.env.PATH ?? '', ...n.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      n.proc = p;
      p.stdout!.on('data', (d: Buffer) => (n.out += d.toString()));
      p.stderr!.on('data', (d: Buffer) => (n.out += d.toString()));
      await waitFor(
        async () =>
          p.exitCode !== null ||
          (await fetch(`${n.url}/healthz`).then(
            (r) => r.ok,
            () => false,
          )),
        `${n.id} to listen`,
        120_000,
      );
      t.equal(p.exitCode, null, `${n.id} runs`, { output: n.out.slice(-2000) });
    };
    const ours = async (n: Node) =>
      (await docker!.listContainers({ all: true, filters: { label: [`${LABEL_OWNER}=${n.owner}`] } })).map((c) => c.Id);

    const password = 'fleet-user-password-0123';
    const su = await new Promise<number | null>((resolve) => {
      const c = spawn(
        process.execPath,
        [CLI, 'create-superuser', '--username', 'alice', '--email', 'alice@example.test'],
        { env: { PATH: process.env.PATH ?? '', ...a.env }, stdio: ['pipe', 'ignore', 'inherit'] },
      );
      c.stdin.end(`${password}\n`);
      c.on('close', resolve);
    });
    t.equal(su, 0, 'create-superuser in the shared database');
    await start(a);
    await start(b);
    const listed = await runCli(b.env, ['nodes', 'ls', '--json']);
    t.same(
      (JSON.parse(listed.stdout) as { id: string; alive: boolean }[]).map((n) => [n.id, n.alive]),
      [
        ['node-a', true],
        ['node-b', true],
      ],
      'both nodes registered',
    );

    // ---- first prompt through A: A runs the sandbox.
    const ca = new Client(a.url);
    t.equal((await ca.login('alice', password)).status, 200, 'login on A');
    const turn1 = await streamTurn(ca, { message: 'hello' });
    const done1 = turn1.events.at(-1);
    t.equal(done1?.stop_reason, 'end_turn', 'turn 1 through A', { done: done1, error: turn1.error });
    const sessionId: string = done1.session_id;
    const [containerA] = await ours(a);
    t.ok(containerA, "the sandbox runs under A's owner label");

    // ---- second prompt through B, with a cookie B issued: forwarded to A, same container.
    const cb = new Client(b.url);
    t.equal((await cb.login('alice', password)).status, 200, 'login on B');
    const turn2 = await streamTurn(cb, { message: 'hello again', session_id: sessionId });
    t.equal(turn2.events.at(-1)?.stop_reason, 'end_turn', 'turn 2 through B', { error: turn2.error });
    t.equal(turn2.headers.get('x-airlock-served-by'), 'node-a', 'B forwarded it to the owner');
    t.match(said(turn2.events), /message 2 of this conversation/, 'the same agent, which kept turn 1');
    t.same(await ours(a), [containerA], 'still the one container on A');
    t.same(await ours(b), [], 'none on B');

    // ---- directory sync asked on both nodes at once: never two unfinished jobs (a database
    // constraint, not a process flag). The nodes run the job, which fails at once here (no
    // directory to reach), so a request that comes after it ended may start the next one.
    const db = await openDatabase({ url: dbUrl });
    t.teardown(() => db.close());
    await saveConnection(db.sql, atRestEncryptor(loadConfig(a.env)), {
      provider: 'google',
      issuer: 'https://accounts.google.com',
      client_id: 'fleet-cid',
      service_account_json: {
        client_email: 'sync@fleet.iam.test',
        private_key: '-----BEGIN PRIVATE KEY-----\nMII\n-----END PRIVATE KEY-----\n',
      },
      delegated_admin_email: 'admin@fleet.test',
    });
    const asked = await Promise.all(
      [...Array(4)].flatMap(() => [
        ca.json('POST', '/api/identity/directory-sync', {}),
        cb.json('POST', '/api/identity/directory-sync', {}),
      ]),
    );
    const created = asked.filter((r) => r.status === 202).length;
    t.ok(
      asked.every((r) => (r.status === 200 || r.status === 202) && typeof r.body.job?.id === 'number'),
      'every request is answered with a job',
    );
    const jobs = await db.sql
      .selectFrom('directory_sync_jobs')
      .select(['id', 'created_at', 'finished_at'])
      .orderBy('id')
      .execute();
    t.ok(
      created >= 1 && jobs.length === created,
      `a row for each request that started a job (${created} of 8), none more`,
    );
    t.equal(new Set(asked.map((r) => r.body.job?.id)).size, jobs.length, 'the others named the job then running');
    for (let i = 1; i < jobs.length; i++) {
      const prev = jobs[i - 1]!;
      t.ok(
        prev.finished_at !== null && Date.parse(String(prev.finished_at)) <= Date.parse(String(jobs[i]!.created_at)),
        `job ${jobs[i]!.id} began after job ${prev.id} had ended: never two at once`,
      );
    }

    // ---- operators on B see the session and its owner; inspect, logs and attach run on A.
    const lsB = JSON.parse((await runCli(b.env, ['sessions', 'ls', '--json'])).stdout) as {
      sessionId: string;
      node: string;
    }[];
    t.same(
      lsB.filter((s) => s.sessionId === sessionId).map((s) => s.node),
      ['node-a'],
      'sessions ls on B names the owner',
    );
    const inspect = await runCli(b.env, ['sessions', 'inspect', sessionId]);
    t.equal(inspect.code, 0, 'sessions inspect on B', { stderr: inspect.stderr });
    const details = JSON.parse(inspect.stdout) as { node: string; containerId: string };
    t.same([details.node, details.containerId], ['node-a', containerA], 'answered by A, with its container');
    const logs = await runCli(b.env, ['sessions', 'logs', sessionId, '--tail', '50']);
    t.equal(logs.code, 0, 'sessions logs on B', { stderr: logs.stderr });
    t.match(logs.stdout + logs.stderr, /control socket listening/, "A's container log, through A");
    // attach from B: a shell in A's container (its hostname is the container id's first 12).
    const piped = spawn(process.execPath, [CLI, 'sessions', 'attach', sessionId], {
      env: { PATH: process.env.PATH ?? '', ...b.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let pipedOut = '';
    piped.stdout!.on('data', (d: Buffer) => (pipedOut += d.toString()));
    piped.stderr!.on('data', (d: Buffer) => (pipedOut += d.toString()));
    piped.stdin!.write('echo "uid=$(id -u) host=$(cat /etc/hostname)"; exit 3\n');
    t.equal(await new Promise((r) => piped.once('exit', r)), 3, "attach on B exits with the shell's status on A", {
      output: pipedOut,
    });
    t.match(
      pipedOut,
      new RegExp(`uid=1001 host=${containerA.slice(0, 12)}`),
      "the agent user's shell in A's container",
    );
    const pty = await attachOnPty(b.env, sessionId, async (io) => {
      await waitFor(() => /\$ $/.test(io.out()), 'the shell prompt', 30_000);
      io.write('echo "SIZE=$(stty size)"\r');
      await waitFor(() => /^SIZE=\d/m.test(io.out()), 'the size', 30_000);
      io.resize(120, 40);
      // The new size travels as a resize frame; the shell sees it once the engine applied it.
      const answers = () => (io.out().match(/^NOW=/gm) ?? []).length;
      await waitFor(
        async () => {
          const asked = answers();
          io.write('echo "NOW=$(stty size)"\r');
          await waitFor(() => answers() > asked, 'the shell to answer', 30_000);
          return /^NOW=40 120\r*$/m.test(io.out());
        },
        'the resize',
        30_000,
      );
      io.write('exit 4\r');
    });
    t.match(pty.out, /^SIZE=37 101\r*$/m, "the shell on A has the operator's window size");
    t.match(pty.out, /^NOW=40 120\r*$/m, 'and follows a resize');
    t.equal(pty.code, 4, 'a terminal attach exits with the shell status too');
    t.match(a.out, /attach from another node/, 'A logs the attach');

    // ---- A dies without a word; B takes the session over once A is silent for AIRLOCK_NODE_LOST_S.
    a.proc!.kill('SIGKILL');
    await new Promise((r) => a.proc!.once('close', r));
    await waitFor(
      async () => {
        const r = await runCli(b.env, ['nodes', 'ls', '--json']);
        return (JSON.parse(r.stdout) as { id: string; alive: boolean }[]).some((n) => n.id === 'node-a' && !n.alive);
      },
      'node-a to count as lost',
      60_000,
    );
    const turn3 = await streamTurn(cb, { message: 'are you there', session_id: sessionId });
    const done3 = turn3.events.at(-1);
    t.equal(done3?.stop_reason, 'end_turn', 'turn 3 through B after A died', { done: done3, error: turn3.error });
    t.equal(turn3.headers.get('x-airlock-served-by'), null, 'B ran it itself');
    t.notMatch(said(turn3.events), /stopped unexpectedly/, 'no lost-sandbox notice');
    t.match(
      said(turn3.events),
      /message 3 of this conversation/,
      "B's new sandbox got the whole conversation from the store",
    );
    const [containerB] = await ours(b);
    t.ok(containerB && containerB !== containerA, 'a new sandbox on B');
    const history = await cb.json('GET', `/api/chat/sessions/${sessionId}/messages`);
    t.equal(history.status, 200);
    t.equal(
      JSON.stringify(history.body).match(/"prompt"/g)?.length ??
        (history.body.turns ?? history.body.messages ?? []).length,
      3,
      'history: all three turns',
    );

    // ---- A comes back: its container of the session B took over is an orphan, removed at start.
    t.ok((await ours(a)).includes(containerA), "A's old container outlived it");
    await start(a);
    await waitFor(async () => !(await ours(a)).includes(containerA), 'A to remove its orphan', 60_000);
    t.pass('the orphan is gone');
    const turn4 = await streamTurn(ca, { message: 'still here', session_id: sessionId });
    t.equal(turn4.headers.get('x-airlock-served-by'), 'node-b', 'a prompt through A now goes to B, the owner');
    t.equal(turn4.events.at(-1)?.stop_reason, 'end_turn');
    // A restart asked on A for the session B owns: B replaces its sandbox.
    const [containerB2] = await ours(b);
    const restart = await runCli(a.env, ['sessions', 'restart', sessionId]);
    t.equal(restart.code, 0, 'sessions restart on A for a session on B', { stderr: restart.stderr });
    t.match(restart.stdout, /node-b/, 'it names the owner');
    await waitFor(
      async () => {
        const now = await ours(b);
        return now.length === 1 && now[0] !== containerB2;
      },
      "B's new sandbox",
      60_000,
    );
    t.pass('B runs a new sandbox for the session');
    const kill = await runCli(a.env, ['sessions', 'kill', sessionId]);
    t.equal(kill.code, 0, 'sessions kill on A for a session on B', { stderr: kill.stderr });
    t.match(kill.stdout, /on node node-b/);
    await waitFor(async () => (await ours(b)).length === 0, "B's sandbox to go", 30_000);

    for (const n of nodes) {
      n.proc!.kill('SIGTERM');
      await new Promise((r) => n.proc!.once('close', r));
      for (const s of [shared.AIRLOCK_NODE_SECRET, shared.AIRLOCK_ENCRYPTION_KEY, 'fleet-agent-user-token-secret-0123'])
        t.notOk(n.out.includes(s), `no secret in ${n.id}'s output`);
      t.notOk(
        n.out.includes(new URL(dbUrl).toString().split('@')[0] + '@') &&
          /:[^@/]+@/.test(dbUrl) &&
          n.out.includes(dbUrl),
        'no database URL with a password in the output',
      );
    }
  });
}
