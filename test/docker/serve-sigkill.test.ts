/**
 * The real daemon killed with SIGKILL: `airlock serve` (a child process of dist/daemon/main.js,
 * configured only through its environment, default pool) serves a chat turn, is SIGKILLed (no
 * cleanup at all), and is started again on the same data dir and port. The restart adopts the
 * live session container (same container id in `airlock sessions ls --json`), the next prompt of
 * that session runs in it with the conversation the agent kept (the demo model counts the
 * messages), the sandbox reaches the restarted daemon over its host route, and once the session
 * is killed and the daemon stopped no container of its owner is left.
 */
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { LABEL_OWNER } from '../../daemon/runtime/session-manager.js';
import { streamTurn, waitFor } from '../helpers/chat.js';
import { Client } from '../helpers/client.js';
import {
  dataDir,
  dockerOrSkip,
  ensureTestImage,
  execIn,
  ROOT,
  runCli,
  sweep,
  uniqueOwner,
  ENGINE_ENV,
} from './helpers.js';

const docker = await dockerOrSkip(t as unknown as Parameters<typeof dockerOrSkip>[0]);
const CLI = join(ROOT, 'dist', 'daemon', 'main.js');

/** A port free right now (the daemon must come back on the same one: its sandboxes' host route names it). */
async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as { port: number };
  await new Promise((r) => srv.close(r));
  return port;
}

interface Listed {
  sessionId: string | null;
  containerId: string;
  state: string;
  adopted: boolean;
  fromPool: boolean;
  turns: number;
}

if (docker) {
  const image = await ensureTestImage(docker);

  t.test(
    'airlock serve killed with SIGKILL and restarted adopts the live container; the next prompt reuses it',
    async (t) => {
      const dir = dataDir(t);
      // The owner label comes from <data dir>/runtime-owner: a unique one lets teardown sweep exactly ours.
      const owner = uniqueOwner('serve-sigkill');
      writeFileSync(join(dir, 'runtime-owner'), owner + '\n', { mode: 0o600 });
      t.teardown(() => sweep(docker as Docker, owner));
      const port = await freePort();
      const env: Record<string, string> = {
        AIRLOCK_DATA_DIR: dir,
        AIRLOCK_PORT: String(port),
        AIRLOCK_IMAGE: image,
        ...ENGINE_ENV,
        AIRLOCK_MODEL_PROVIDER: 'demo',
        AIRLOCK_LOG_LEVEL: 'info',
        AGENT_USER_TOKEN_SECRET: 'serve-sigkill-agent-user-token-secret',
        MCP_INTERNAL_SECRET: 'serve-sigkill-mcp-internal-secret-0123',
      };
      const url = `http://127.0.0.1:${port}`;
      const cli = (args: string[]) => runCli(env, args);

      const password = 'alice-password-0123';
      const su = await new Promise<number | null>((resolve) => {
        const c = spawn(
          process.execPath,
          [CLI, 'create-superuser', '--username', 'alice', '--email', 'alice@example.test'],
          { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['pipe', 'ignore', 'inherit'] },
        );
        c.stdin.end(`${password}\n`);
        c.on('close', resolve);
      });
      t.equal(su, 0, 'create-superuser (password from stdin)');

      const procs: ChildProcess[] = [];
      t.teardown(() => {
        for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
      });
      /** Start `airlock serve`; resolves once it answers /healthz. */
      const startServe = async () => {
        const p = spawn(process.execPath, [CLI, 'serve'], {
          env: { PATH: process.env.PATH ?? '', ...env },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        procs.push(p);
        let out = '';
        p.stdout!.on('data', (d: Buffer) => (out += d.toString()));
        p.stderr!.on('data', (d: Buffer) => (out += d.toString()));
        const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
          p.on('close', (code, signal) => r({ code, signal })),
        );
        await waitFor(
          async () =>
            p.exitCode !== null ||
            (out.includes('airlock listening') &&
              (await fetch(`${url}/healthz`).then(
                (r) => r.ok,
                () => false,
              ))),
          'airlock serve to listen',
          120_000,
        );
        t.equal(p.exitCode, null, 'serve runs', { output: out.slice(-2000) });
        return { p, exited, output: () => out };
      };
      const ls = async (): Promise<Listed[]> => {
        const r = await cli(['sessions', 'ls', '--json']);
        if (r.code !== 0) throw new Error(`sessions ls --json: ${r.stderr}`);
        return JSON.parse(r.stdout) as Listed[];
      };
      const said = (events: { type: string; text?: string }[]) =>
        events
          .filter((e) => e.type === 'text_delta')
          .map((e) => e.text)
          .join('');
      const ours = async () =>
        (await docker!.listContainers({ all: true, filters: { label: [`${LABEL_OWNER}=${owner}`] } })).map((c) => c.Id);

      // ---- the first daemon: once its pool has filled, one turn in a new session (claimed from the pool).
      const first = await startServe();
      // serve listens before its pool has filled; a prompt sent earlier cold-starts instead (CI saw it).
      await waitFor(async () => (await ls()).some((s) => s.state === 'pool'), 'the pool to fill');
      const c1 = new Client(url);
      t.equal((await c1.login('alice', password)).status, 200, 'logged in over HTTP');
      const turn1 = await streamTurn(c1, { message: 'hello' });
      t.equal(turn1.status, 200, 'chat stream', { error: turn1.error });
      const done1 = turn1.events.at(-1);
      t.equal(done1?.stop_reason, 'end_turn', 'the first turn ends normally', { done: done1 });
      const sessionId: string = done1.session_id;
      t.match(said(turn1.events), /message 1 of this conversation/, 'the first message of the conversation');
      const before = (await ls()).find((s) => s.sessionId === sessionId);
      t.ok(before, 'the session is live in sessions ls');
      t.equal(before?.fromPool, true, 'its sandbox came from the pool');
      await waitFor(async () => (await ls()).some((s) => s.state === 'pool'), 'the pool to refill');
      const live = await ours();
      t.ok(live.includes(before!.containerId), 'its container carries our owner label');

      // ---- SIGKILL: no shutdown code runs at all.
      first.p.kill('SIGKILL');
      t.same(await first.exited, { code: null, signal: 'SIGKILL' }, 'serve died of SIGKILL');
      t.equal(
        (await docker!.getContainer(before!.containerId).inspect()).State.Running,
        true,
        'the session container outlives the killed daemon',
      );
      t.same((await ours()).sort(), live.sort(), 'every container of ours is still there (session and pool)');

      // ---- the same daemon started again on the same data dir and port.
      const second = await startServe();
      const after = await ls();
      const adopted = after.find((s) => s.sessionId === sessionId);
      t.equal(adopted?.containerId, before!.containerId, 'sessions ls shows the same container, live again');
      t.equal(adopted?.adopted, true, 'adopted');
      t.equal(after.filter((s) => s.state === 'pool').length, 1, 'the pool container rejoined the pool (not doubled)');
      t.same((await ours()).sort(), live.sort(), 'no container was replaced or added');

      const c2 = new Client(url);
      t.equal((await c2.login('alice', password)).status, 200);
      const turn2 = await streamTurn(c2, { message: 'hello again', session_id: sessionId });
      const done2 = turn2.events.at(-1);
      t.equal(done2?.stop_reason, 'end_turn', 'the turn after the restart ends normally', { done: done2 });
      t.equal(done2?.session_id, sessionId, 'in the same session');
      t.notMatch(said(turn2.events), /stopped unexpectedly/, 'no lost-sandbox notice');
      t.match(
        said(turn2.events),
        /message 2 of this conversation/,
        'the agent in the adopted container kept the earlier turn',
      );
      const used = (await ls()).find((s) => s.sessionId === sessionId);
      t.equal(used?.containerId, before!.containerId, 'the prompt ran in the adopted container');
      t.equal(used?.turns, 1, 'one turn since the adoption');

      // The sandbox reaches the restarted daemon through its host route (the fixed port kept it right).
      const inspect = await cli(['sessions', 'inspect', sessionId]);
      t.equal(inspect.code, 0, 'sessions inspect', { stderr: inspect.stderr });
      const childPid = (JSON.parse(inspect.stdout) as { supervisor: { child_pid: number } }).supervisor.child_pid;
      const environ = await execIn(docker!, before!.containerId, [
        '/bin/sh',
        '-c',
        `tr '\\0' '\\n' < /proc/${childPid}/environ`,
      ]);
      t.notMatch(
        environ.stdout,
        /AGENT_USER_TOKEN|AGENT_API_BASE_URL/,
        'the child holds its session settings in memory (handed over stdin), not in its environ',
      );
      // The agent's own fetch_memory call: host route, the sandbox's own AGENT_USER_TOKEN, the restarted daemon's agent API.
      const recall = await streamTurn(c2, { message: 'what do you remember?', session_id: sessionId });
      t.match(
        recall.events.find((e) => e.type === 'tool_end'),
        { tool: 'fetch_memory', ok: true },
        'the agent API of the restarted daemon answers the adopted sandbox',
      );

      // ---- clean up through the CLI, then stop the daemon: nothing of ours is left.
      const kill = await cli(['sessions', 'kill', sessionId]);
      t.equal(kill.code, 0, 'sessions kill', { stderr: kill.stderr });
      second.p.kill('SIGTERM');
      t.same(await second.exited, { code: 0, signal: null }, 'serve stops on SIGTERM', {
        output: second.output().slice(-2000),
      });
      t.same(await ours(), [], 'no container of the owner is left');
      for (const s of Object.values(env).filter((v) => v.includes('secret')))
        t.notOk((first.output() + second.output()).includes(s), 'no secret in the output');
    },
  );
}
