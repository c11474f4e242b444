/**
 * The agent's V8 startup snapshot (docs/runtime.md, "Cold start, step by step"), made as the image
 * makes it: esbuild's CommonJS bundle of dist/agent/main.js (bundleSandboxEntries), then
 * `node --build-snapshot` with the sandbox's node flags, here with this machine's node. An agent
 * started from it must be the agent: its settings read when it starts, not when the snapshot was
 * made; the model SDKs in the heap (agent/snapshot.ts), packages outside it (the chart canvas)
 * loaded at run time; and
 * nothing that must differ between processes frozen into the blob (UUIDs).
 */
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { silentLogger } from '../../core/index.js';
import { SNAPSHOT_BLOB, SNAPSHOT_SCRIPT, SANDBOX_NODE_FLAGS } from '../../core/sandbox-env.js';
import { bundleSandboxEntries, SNAPSHOT_BANNER } from '../../daemon/runtime/bundle.js';
import { start as startOpenAi } from '../../emulator/model-openai.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const RUN_FLAGS = [...SANDBOX_NODE_FLAGS, '--disable-warning=ExperimentalWarning'];

interface Run {
  stdout: Array<Record<string, unknown>>;
  stderr: string;
  code: number | null;
}

/** One agent from the blob: ready, configure, one prompt, then stdin ends. */
function runAgent(
  blob: string,
  env: Record<string, string>,
  settings: Record<string, string>,
  prompt: string,
  flags: string[] = [],
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...RUN_FLAGS, ...flags, '--snapshot-blob', blob], {
      cwd: '/',
      env: { PATH: process.env.PATH ?? '', HOME: '/tmp', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const run: Run = { stdout: [], stderr: '', code: null };
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.stderr.on('data', (b: Buffer) => (run.stderr += b.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      run.code = code;
      resolve(run);
    });
    createInterface({ input: child.stdout }).on('line', (line) => {
      const m = JSON.parse(line) as Record<string, unknown>;
      run.stdout.push(m);
      if (m.type === 'ready') child.stdin.write(JSON.stringify({ type: 'configure', env: settings }) + '\n');
      else if (m.type === 'configured')
        child.stdin.write(JSON.stringify({ type: 'prompt', turn_id: 't1', prompt }) + '\n');
      else if (m.type === 'turn_end') child.stdin.end();
    });
  });
}

const events = (r: Run) => r.stdout.filter((m) => m.type === 'event').map((m) => m.event as Record<string, unknown>);

t.test('an agent started from its startup snapshot', async (t) => {
  const out = mkdtempSync(join(ROOT, '.test-agent-snapshot-'));
  t.teardown(() => rmSync(out, { recursive: true, force: true }));
  const bundled = await bundleSandboxEntries(ROOT, out, silentLogger());
  if (!bundled.includes('agent')) {
    if (process.env.CI === 'true') t.fail('esbuild is not installed, and CI needs it');
    else t.plan(0, 'esbuild is not installed: no snapshot to test');
    return;
  }
  const dir = join(out, 'agent');
  const built = spawnSync(
    process.execPath,
    ['--no-warnings', ...SANDBOX_NODE_FLAGS, '--snapshot-blob', SNAPSHOT_BLOB, '--build-snapshot', SNAPSHOT_SCRIPT],
    {
      cwd: dir,
      // Settings present while the snapshot is built must not be the ones an agent runs with.
      env: { PATH: process.env.PATH ?? '', AGENT_LOG_LEVEL: 'debug' },
      encoding: 'utf8',
    },
  );
  t.equal(built.status, 0, `the snapshot builds (${built.stderr.slice(0, 400)})`);
  const blob = join(dir, SNAPSHOT_BLOB);

  await t.test(
    'reads its settings at start, loads the chart canvas at run time, and makes its own UUIDs',
    async (t) => {
      const prompt = 'chart 3 5 8 and email the chart to someone@example.com';
      const [a, b] = await Promise.all(
        [0, 1].map(() => runAgent(blob, { AGENT_LOG_LEVEL: 'warn' }, { AGENT_MODEL_PROVIDER: 'demo' }, prompt)),
      );
      for (const r of [a, b]) {
        t.equal(r.code, 0, 'the agent exits 0 when its stdin ends');
        t.same(
          r.stdout.map((m) => m.type).filter((x) => x !== 'event'),
          ['ready', 'configured', 'turn_end'],
          'ready, configured, one turn',
        );
        t.notMatch(
          r.stderr,
          /agent ready \(idle\)|"level":20/,
          "logs at the level it started with (warn), not the build's (debug)",
        );
        t.notMatch(
          r.stderr,
          /ExperimentalWarning|dynamic import callback/i,
          'no loader warning, no missing import callback',
        );
      }
      const chart = (r: Run) =>
        events(r).find((e) => e.type === 'tool_end' && e.tool === 'rasterize_chart') as
          { ok: boolean; output?: { filename: string } } | undefined;
      t.equal(chart(a)?.ok, true, 'the chart is drawn (the canvas package loads at run time)');
      t.equal(chart(b)?.ok, true, 'in the second agent too');
      t.match(chart(a)?.output?.filename, /^[0-9a-f-]{36}\.png$/, 'the chart file is named by a UUID');
      t.not(
        chart(a)?.output?.filename,
        chart(b)?.output?.filename,
        'two agents from one snapshot name their charts differently',
      );
    },
  );

  await t.test('talks to an OpenAI-shaped model through the SDK its snapshot holds', async (t) => {
    const openai = await startOpenAi({ respond: () => ({ kind: 'reply', text: 'hi from the model' }) });
    t.teardown(() => openai.close());
    // Node's module debug log names every file the loaders read: the SDK must not be one of them.
    const r = await runAgent(
      blob,
      { AGENT_LOG_LEVEL: 'warn', NODE_DEBUG: 'esm,module' },
      { AGENT_MODEL_PROVIDER: 'openai', AGENT_MODEL: 'm', AGENT_MODEL_BASE_URL: openai.url, AGENT_MODEL_API_KEY: 'k' },
      'hello',
    );
    const text = events(r)
      .filter((e) => e.type === 'text_delta')
      .map((e) => e.text)
      .join('');
    t.equal(text, 'hi from the model');
    t.equal(r.stdout.at(-1)?.stop_reason, 'end_turn');
    t.notMatch(r.stderr, /node_modules\/openai\//, 'the SDK came from the snapshot: no file of it was loaded');
  });

  await t.test('an agent that starts slowly still keeps its stall bound (timers fire)', async (t) => {
    // On a loaded host (twenty sandboxes starting at once) an agent's snapshot main ran seconds
    // after its process began. The blob held Node's timer state of the build process, so no timer
    // of such an agent ever fired: a stalled answer ran into the egress gateway's 120 s bound
    // (core/snapshot-timers.ts). Here a preload keeps the process busy for 2 s first.
    const busy = join(out, 'busy.cjs');
    writeFileSync(busy, 'const until = Date.now() + 2000;\nwhile (Date.now() < until) {}\n');
    const stalling = await startOpenAi({ respond: () => ({ kind: 'stall', text: 'one chunk' }) });
    t.teardown(() => stalling.close());
    const settings = {
      AGENT_MODEL_PROVIDER: 'openai',
      AGENT_MODEL: 'm',
      AGENT_MODEL_BASE_URL: stalling.url,
      AGENT_MODEL_API_KEY: 'k',
      AGENT_MODEL_TIMEOUT_S: '1',
      AGENT_MODEL_FIRST_BYTE_TIMEOUT_S: '2',
    };
    const r = await runAgent(blob, { AGENT_LOG_LEVEL: 'warn' }, settings, 'hello', ['--require', busy]);
    t.equal(r.code, 0, `the agent ended its turn and exited (${r.stderr.slice(0, 300)})`);
    t.match(
      r.stdout.at(-1),
      { type: 'turn_end', stop_reason: 'error', error: { code: 'ERR_MODEL_TIMEOUT' } },
      'the stall timer fired: the turn ends with ERR_MODEL_TIMEOUT',
    );
  });
});

t.test('the snapshot banner: a UUID made while the snapshot is built does not freeze the cache', async (t) => {
  const dir = mkdtempSync(join(ROOT, '.test-snapshot-banner-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(
    join(dir, 'probe.cjs'),
    [
      SNAPSHOT_BANNER,
      "const c = require('node:crypto');",
      'const atBuild = [c.randomUUID(), crypto.randomUUID()];',
      'function main() { process.stdout.write(JSON.stringify({ atBuild, node: c.randomUUID(), web: crypto.randomUUID() })); }',
      "const v8 = require('node:v8');",
      'if (v8.startupSnapshot.isBuildingSnapshot()) v8.startupSnapshot.setDeserializeMainFunction(main); else main();',
    ].join('\n'),
  );
  const built = spawnSync(
    process.execPath,
    ['--no-warnings', '--snapshot-blob', 'probe.blob', '--build-snapshot', 'probe.cjs'],
    { cwd: dir, encoding: 'utf8' },
  );
  t.equal(built.status, 0, `the probe snapshot builds (${built.stderr.slice(0, 300)})`);
  const runs = [0, 1].map(() => {
    const r = spawnSync(process.execPath, ['--snapshot-blob', 'probe.blob'], { cwd: dir, encoding: 'utf8' });
    return JSON.parse(r.stdout) as { atBuild: string[]; node: string; web: string };
  });
  t.same(runs[0].atBuild, runs[1].atBuild, 'what was made at build time is in the blob (the probe works)');
  t.not(runs[0].node, runs[1].node, "node:crypto's randomUUID differs between two processes");
  t.not(runs[0].web, runs[1].web, "the global crypto's randomUUID differs between two processes");
});
