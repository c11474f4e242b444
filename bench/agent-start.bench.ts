import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { silentLogger } from '../core/index.js';
import { SNAPSHOT_BLOB, SNAPSHOT_SCRIPT, SANDBOX_NODE_FLAGS } from '../core/sandbox-env.js';
import { bundleSandboxEntries } from '../daemon/runtime/bundle.js';
import { start as startOpenAi } from '../emulator/model-openai.js';
import { start as startAnthropic } from '../emulator/model-anthropic.js';
import { nowMs, round, stats, type BenchResult } from './lib.js';

/**
 * The agent child as the sandbox runs it: the one-file esbuild bundle of dist/agent/main.js, and
 * the V8 startup snapshot the image makes of its CommonJS twin (docs/runtime.md, "Cold start, step
 * by step"), built here with this machine's node and the sandbox's flags. Measures the time from
 * spawn to the child's `ready` line (both in-process MCP servers up), then `configure` and one
 * turn against a local model emulator (where a lazily loaded model SDK pays its load), for the
 * bundle and the snapshot interleaved. Baseline in the same run: `node -e 0`.
 */
const N = 12;
const DIST = dirname(dirname(fileURLToPath(import.meta.url)));
const ROOT = join(DIST, '..');

type Row = Record<string, string | number>;

/** Spawn the agent, time `ready`, then `configure` and one prompt until its turn_end. */
function runAgent(
  args: string[],
  settings: Record<string, string>,
  promptAfterMs = 0,
): Promise<{ ready: number; firstTurn: number }> {
  return new Promise((resolve, reject) => {
    const t0 = nowMs();
    const child = spawn(process.execPath, args, {
      env: { PATH: process.env.PATH ?? '', AGENT_LOG_LEVEL: 'warn', HOME: '/tmp' },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let ready = 0;
    let t1 = 0;
    child.on('error', reject);
    child.on('exit', (code) => {
      if (!ready) reject(new Error(`agent exited ${code} before ready`));
    });
    createInterface({ input: child.stdout }).on('line', (line) => {
      const m = JSON.parse(line) as { type: string; stop_reason?: string; error?: unknown };
      if (m.type === 'ready') {
        ready = nowMs() - t0;
        setTimeout(() => {
          t1 = nowMs();
          child.stdin.write(JSON.stringify({ type: 'configure', env: settings }) + '\n');
        }, promptAfterMs);
      } else if (m.type === 'configured') {
        if (m.error) return reject(new Error(`configure failed: ${line}`));
        child.stdin.write(JSON.stringify({ type: 'prompt', turn_id: 't1', prompt: 'hello' }) + '\n');
      } else if (m.type === 'turn_end') {
        const firstTurn = nowMs() - t1;
        child.stdin.end();
        if (m.stop_reason !== 'end_turn') return reject(new Error(`turn ended ${line}`));
        child.once('exit', () => resolve({ ready, firstTurn }));
      }
    });
  });
}

function bareNode(): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = nowMs();
    const p = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    p.on('error', reject);
    p.on('exit', () => resolve(nowMs() - t0));
  });
}

export async function run(): Promise<BenchResult | { skipped: string }> {
  // Inside the repository, so the bundle finds node_modules as it does in the image.
  const out = mkdtempSync(join(ROOT, '.bench-agent-bundle-'));
  const openai = await startOpenAi({ respond: () => ({ kind: 'reply', text: 'hi there' }) });
  const anthropic = await startAnthropic({ respond: () => ({ kind: 'reply', text: 'hi there' }) });
  try {
    const bundled = await bundleSandboxEntries(ROOT, out, silentLogger());
    if (!bundled.includes('agent')) return { skipped: 'esbuild is not installed' };
    const entry = join(out, 'agent', 'main.js');
    const bytes = statSync(entry).size;
    const built = spawnSync(
      process.execPath,
      ['--no-warnings', ...SANDBOX_NODE_FLAGS, '--snapshot-blob', SNAPSHOT_BLOB, '--build-snapshot', SNAPSHOT_SCRIPT],
      { cwd: join(out, 'agent'), encoding: 'utf8' },
    );
    if (built.status !== 0) throw new Error(`the agent snapshot did not build: ${built.stderr}`);
    const blob = join(out, 'agent', SNAPSHOT_BLOB);
    const blobBytes = statSync(blob).size;
    const bundle = [...SANDBOX_NODE_FLAGS, entry];
    const snapshot = [...SANDBOX_NODE_FLAGS, '--disable-warning=ExperimentalWarning', '--snapshot-blob', blob];
    const openaiEnv = {
      AGENT_MODEL_PROVIDER: 'openai',
      AGENT_MODEL: 'bench',
      AGENT_MODEL_BASE_URL: openai.url,
      AGENT_MODEL_API_KEY: 'k',
    };
    const anthropicEnv = {
      AGENT_MODEL_PROVIDER: 'anthropic',
      AGENT_MODEL: 'bench',
      AGENT_MODEL_BASE_URL: anthropic.url,
      AGENT_MODEL_API_KEY: 'k',
    };
    const demoEnv = { AGENT_MODEL_PROVIDER: 'demo' };
    // name, command, session settings, configure delay after ready: 0 is an instant session (the
    // prompt waits for the SDK load), 1500 a warm pool member (ready long before its user).
    const variants: Array<[string, string[], Record<string, string>, number]> = [
      ['bundle, demo', bundle, demoEnv, 0],
      ['snapshot, demo', snapshot, demoEnv, 0],
      ['bundle, openai', bundle, openaiEnv, 0],
      ['snapshot, openai', snapshot, openaiEnv, 0],
      ['snapshot, anthropic', snapshot, anthropicEnv, 0],
      ['snapshot, openai (configured 1.5 s after ready)', snapshot, openaiEnv, 1500],
    ];
    const ready: Record<string, number[]> = {};
    const turn: Record<string, number[]> = {};
    const bare: number[] = [];
    await runAgent(bundle, openaiEnv); // warm the file cache
    await runAgent(snapshot, openaiEnv);
    // Interleaved, so drift on a shared machine hits every variant alike.
    for (let i = 0; i < N; i++) {
      bare.push(await bareNode());
      for (const [name, args, env, delay] of variants) {
        const r = await runAgent(args, env, delay);
        (ready[name] ??= []).push(r.ready);
        (turn[name] ??= []).push(r.firstTurn);
      }
    }
    const b = stats(bare);
    const rows: Row[] = [{ what: 'node -e 0', n: b.n, p50_ms: b.p50, p99_ms: b.p99 }];
    const ratios: Record<string, number> = {};
    for (const [name] of variants) {
      const s = stats(ready[name]);
      const f = stats(turn[name]);
      rows.push({ what: `agent ${name}: spawn → ready`, n: s.n, p50_ms: s.p50, p99_ms: s.p99 });
      rows.push({ what: `agent ${name}: first turn`, n: f.n, p50_ms: f.p50, p99_ms: f.p99 });
      if (!name.includes('after ready')) ratios[`${name}_ready_vs_bare_node`] = round(s.p50 / b.p50, 2);
    }
    const med = (name: string, m: Record<string, number[]>) => stats(m[name]).p50;
    ratios.snapshot_vs_bundle_ready_demo = round(med('snapshot, demo', ready) / med('bundle, demo', ready), 2);
    ratios.snapshot_vs_bundle_ready_plus_turn_demo = round(
      (med('snapshot, demo', ready) + med('snapshot, demo', turn)) /
        (med('bundle, demo', ready) + med('bundle, demo', turn)),
      2,
    );
    ratios.snapshot_vs_bundle_ready_plus_turn_openai = round(
      (med('snapshot, openai', ready) + med('snapshot, openai', turn)) /
        (med('bundle, openai', ready) + med('bundle, openai', turn)),
      2,
    );
    rows.push({ what: 'agent bundle bytes', n: 1, p50_ms: bytes, p99_ms: bytes });
    rows.push({ what: 'agent snapshot blob bytes', n: 1, p50_ms: blobBytes, p99_ms: blobBytes });
    return {
      name: 'agent-start',
      rows,
      ratios,
      notes: `agent bundle ${round(bytes / 1024, 1)} KiB, snapshot ${round(blobBytes / 1048576, 1)} MiB; "first turn" is configure + one turn, and includes loading the model SDK`,
    };
  } finally {
    await openai.close();
    await anthropic.close();
    rmSync(out, { recursive: true, force: true });
  }
}
