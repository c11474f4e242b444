import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { silentLogger } from '../core/index.js';
import { bundleSandboxEntries } from '../daemon/runtime/image.js';
import { start as startOpenAi } from '../emulator/model-openai.js';
import { start as startAnthropic } from '../emulator/model-anthropic.js';
import { nowMs, round, stats, type BenchResult } from './lib.js';

/**
 * The agent child as the sandbox runs it: the one-file esbuild bundle of dist/agent/main.js.
 * Measures the bundle's bytes, the time from spawn to the child's `ready` line (no MCP servers,
 * so only the agent's own load counts) and the first turn against a local model emulator (where
 * a lazily loaded model SDK pays its load). Baseline in the same run: `node -e 0`.
 */
const N = 12;
const DIST = dirname(dirname(fileURLToPath(import.meta.url)));
const ROOT = join(DIST, '..');

type Row = Record<string, string | number>;

/** Spawn the agent, time `ready`, then one prompt until its turn_end. */
function runAgent(entry: string, env: Record<string, string>, promptAfterMs = 0): Promise<{ ready: number; firstTurn: number }> {
  return new Promise((resolve, reject) => {
    const t0 = nowMs();
    const child = spawn(process.execPath, [entry], {
      env: { PATH: process.env.PATH ?? '', AGENT_MCP_SERVERS: '[]', AGENT_LOG_LEVEL: 'warn', ...env },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let ready = 0;
    let t1 = 0;
    child.on('error', reject);
    child.on('exit', (code) => {
      if (!ready) reject(new Error(`agent exited ${code} before ready`));
    });
    createInterface({ input: child.stdout }).on('line', (line) => {
      const m = JSON.parse(line) as { type: string; stop_reason?: string };
      if (m.type === 'ready') {
        ready = nowMs() - t0;
        setTimeout(() => {
          t1 = nowMs();
          child.stdin.write(JSON.stringify({ type: 'prompt', turn_id: 't1', prompt: 'hello' }) + '\n');
        }, promptAfterMs);
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
  const out = mkdtempSync(join(DIST, '.bench-agent-bundle-'));
  const openai = await startOpenAi({ respond: () => ({ kind: 'reply', text: 'hi there' }) });
  const anthropic = await startAnthropic({ respond: () => ({ kind: 'reply', text: 'hi there' }) });
  try {
    const bundled = await bundleSandboxEntries(ROOT, out, silentLogger());
    if (!bundled.includes('agent')) return { skipped: 'esbuild is not installed' };
    const entry = join(out, 'agent', 'main.js');
    const bytes = statSync(entry).size;
    const openaiEnv = { AGENT_MODEL_PROVIDER: 'openai', AGENT_MODEL: 'bench', AGENT_MODEL_BASE_URL: openai.url, AGENT_MODEL_API_KEY: 'k' };
    const anthropicEnv = { AGENT_MODEL_PROVIDER: 'anthropic', AGENT_MODEL: 'bench', AGENT_MODEL_BASE_URL: anthropic.url, AGENT_MODEL_API_KEY: 'k' };
    // name, env, prompt delay after ready: 0 is an instant session (the prompt waits for the SDK
    // load), 1500 a warm pool member (ready long before the user's first prompt).
    const variants: Array<[string, Record<string, string>, number]> = [
      ['demo', { AGENT_MODEL_PROVIDER: 'demo' }, 0],
      ['openai', openaiEnv, 0],
      ['anthropic', anthropicEnv, 0],
      ['openai (prompt 1.5 s after ready)', openaiEnv, 1500],
      ['anthropic (prompt 1.5 s after ready)', anthropicEnv, 1500],
    ];
    const ready: Record<string, number[]> = {};
    const turn: Record<string, number[]> = {};
    const bare: number[] = [];
    await runAgent(entry, variants[1][1]); // warm the file cache
    // Interleaved, so drift on a shared machine hits every variant alike.
    for (let i = 0; i < N; i++) {
      bare.push(await bareNode());
      for (const [name, env, delay] of variants) {
        const r = await runAgent(entry, env, delay);
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
    rows.push({ what: 'agent bundle bytes', n: 1, p50_ms: bytes, p99_ms: bytes });
    return {
      name: 'agent-start',
      rows,
      ratios,
      notes: `agent bundle ${bytes} bytes (${round(bytes / 1024, 1)} KiB); the first turn includes loading the model SDK when it loads lazily`,
    };
  } finally {
    await openai.close();
    await anthropic.close();
    rmSync(out, { recursive: true, force: true });
  }
}
