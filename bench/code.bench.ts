/**
 * run_python in the sandbox image (`npm run bench -- code`): the tools MCP server run in a
 * hardened container of the image (network none, read-only root, uid 1001), driven over stdio
 * by the SDK client as the agent drives it. Measures the first call of a chat (interpreter start
 * with pandas, numpy and matplotlib imported) in fresh containers, and warm calls of a cell that
 * does nothing (`pass`: all of it is overhead) against the same server's MCP round trip of a
 * tool that fails at once (read_document of a missing file: the baseline of one tool call).
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { silentLogger } from '../core/index.js';
import { createDocker, ensureSandboxImage, NODE_RUNTIME } from '../daemon/runtime/index.js';
import { nowMs, round, stats, type BenchResult } from './lib.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const TAG = 'airlock/sandbox:bench-code';
const FIRST_N = 5;
const WARM_N = 200;

async function server(): Promise<Client> {
  const transport = new StdioClientTransport({
    command: 'docker',
    args: [
      'run',
      '-i',
      '--rm',
      '--network',
      'none',
      '--read-only',
      '--cap-drop',
      'ALL',
      '--user',
      '1001:1001',
      '--tmpfs',
      '/workspace:uid=1001,gid=1001,mode=0700',
      '--tmpfs',
      '/tmp',
      '--tmpfs',
      '/home/agent:uid=1001',
      '-e',
      'HOME=/home/agent',
      '-w',
      '/workspace',
      '--entrypoint',
      '/usr/local/bin/node',
      TAG,
      '/opt/airlock/dist/tools/main.js',
    ],
    stderr: 'ignore',
  });
  const client = new Client({ name: 'bench', version: '0' });
  await client.connect(transport, { timeout: 120_000 });
  return client;
}

const call = (c: Client, name: string, args: Record<string, unknown>) => c.callTool({ name, arguments: args }, undefined, { timeout: 120_000 });

export async function run(): Promise<BenchResult | { skipped: string }> {
  const docker = createDocker({ docker: { socketPath: '/var/run/docker.sock', image: TAG } });
  try {
    await docker.ping();
  } catch {
    return { skipped: 'no Docker engine' };
  }
  await ensureSandboxImage({ docker, tag: TAG, root: ROOT, log: silentLogger(), node: NODE_RUNTIME });
  const first: number[] = [];
  for (let i = 0; i < FIRST_N; i++) {
    const c = await server();
    const s = nowMs();
    const r = await call(c, 'run_python', { code: 'pd.__version__' });
    first.push(nowMs() - s);
    if (r.isError) throw new Error(JSON.stringify(r.content));
    await c.close();
  }
  const c = await server();
  await call(c, 'run_python', { code: 'x = 1' });
  const warm: number[] = [];
  const base: number[] = [];
  for (let i = 0; i < WARM_N; i++) {
    let s = nowMs();
    await call(c, 'run_python', { code: 'pass' });
    warm.push(nowMs() - s);
    s = nowMs();
    await call(c, 'read_document', { name: 'missing.pdf' });
    base.push(nowMs() - s);
  }
  await c.close();
  const f = stats(first);
  const w = stats(warm);
  const b = stats(base);
  return {
    name: 'code',
    rows: [
      { what: 'first run_python call (interpreter + pandas, numpy, matplotlib)', n: f.n, p50_ms: round(f.p50, 1), p99_ms: round(f.p99, 1) },
      { what: 'warm run_python call of `pass`', n: w.n, p50_ms: round(w.p50, 2), p99_ms: round(w.p99, 2) },
      { what: 'baseline: a tool call that fails at once (MCP round trip)', n: b.n, p50_ms: round(b.p50, 2), p99_ms: round(b.p99, 2) },
    ],
    ratios: { warm_over_baseline_p50: w.p50 / b.p50 },
    notes: `warm overhead beyond an MCP round trip, p50: ${round(w.p50 - b.p50, 2)} ms (goal ≤ 30 ms)`,
  };
}
