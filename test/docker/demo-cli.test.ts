/**
 * `airlock demo` as a newcomer runs it (the CLI as a child process, default pool): the banner,
 * a chart mailed from a real sandbox, then Ctrl-C (SIGINT): exit 0 and no container of the
 * demo left running (its emulators stop with it, so nothing is kept for adoption).
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LABEL_OWNER } from '../../daemon/runtime/session-manager.js';
import { streamTurn, waitFor } from '../helpers/chat.js';
import { Client } from '../helpers/client.js';
import { dataDir, dockerOrSkip, ensureTestImage, ROOT, sweep } from './helpers.js';

const docker = await dockerOrSkip(t as unknown as Parameters<typeof dockerOrSkip>[0]);
if (docker) {
  const image = await ensureTestImage(docker);

  t.test('airlock demo through the CLI: banner, a mailed chart, Ctrl-C removes its sandboxes', async (t) => {
    const dir = dataDir(t);
    const child = spawn(process.execPath, [join(ROOT, 'dist', 'daemon', 'main.js'), 'demo'], {
      env: { PATH: process.env.PATH ?? '', AIRLOCK_DATA_DIR: dir, AIRLOCK_PORT: '0', AIRLOCK_IMAGE: image },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.on('close', r));
    t.teardown(() => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    await waitFor(() => out.includes('Ctrl-C stops everything') || child.exitCode !== null, 'the demo banner', 120_000);
    t.equal(child.exitCode, null, `the demo runs (${out.slice(-300)})`);
    const url = /Open {2,}(http:\/\/\S+)\//.exec(out)?.[1];
    const login = /Log in as {2,}(\S+) \/ (\S+)/.exec(out);
    t.ok(url && login, 'the banner shows the URL and the demo login');
    const owner = readFileSync(join(dir, 'runtime-owner'), 'utf8').trim();
    t.teardown(() => sweep(docker, owner));

    const c = new Client(url!);
    t.equal((await c.login(login![1], login![2])).status, 200, 'the printed password works');
    const r = await streamTurn(c, { message: 'chart the sample spreadsheet and email it to someone@example.com' });
    t.equal(r.events.at(-1).stop_reason, 'end_turn');
    t.same(r.events.filter((e) => e.type === 'tool_end').map((e) => e.ok), [true, true, true, true], 'search, fetch, chart, mail');
    const ours = async () => (await docker.listContainers({ all: true, filters: { label: [`${LABEL_OWNER}=${owner}`] } })).length;
    t.ok((await ours()) >= 1, 'a sandbox runs for the session');

    child.kill('SIGINT');
    t.equal(await exited, 0, 'Ctrl-C: exit 0');
    t.match(out, /SIGINT: stopping the demo/);
    t.equal(await ours(), 0, 'no container of the demo is left');
  });
}
