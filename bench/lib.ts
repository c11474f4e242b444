import { mkdirSync, writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface BenchResult {
  name: string;
  /** Rows of figures; each row names what it measured. */
  rows: Record<string, string | number>[];
  /** Ratios against the same-run baseline. */
  ratios: Record<string, number>;
  notes?: string;
}

export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

export function stats(samples: number[]): { n: number; p50: number; p99: number; mean: number } {
  const s = [...samples].sort((a, b) => a - b);
  return {
    n: s.length,
    p50: round(percentile(s, 50)),
    p99: round(percentile(s, 99)),
    mean: round(s.reduce((a, b) => a + b, 0) / (s.length || 1)),
  };
}

export function round(n: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** Print a table and write bench/results/<name>.json. */
export function report(r: BenchResult): void {
  process.stdout.write(`\n## ${r.name}\n`);
  console.table(r.rows);
  for (const [k, v] of Object.entries(r.ratios)) process.stdout.write(`  ratio ${k}: ${round(v, 2)}\n`);
  if (r.notes) process.stdout.write(`  ${r.notes}\n`);
  let root = dirname(fileURLToPath(import.meta.url));
  root = join(root, '..', '..');
  const dir = join(root, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, `${r.name}.json`),
    JSON.stringify({ ...r, at: new Date().toISOString(), node: process.version }, null, 2),
  );
}

/** Run `fn` n times from `concurrency` workers; per-call latencies (ms) and requests per second. */
export async function measure(
  n: number,
  fn: () => Promise<void>,
  concurrency = 8,
): Promise<{ samples: number[]; rps: number }> {
  const samples: number[] = [];
  let next = 0;
  const t0 = nowMs();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < n) {
        const s = nowMs();
        await fn();
        samples.push(nowMs() - s);
      }
    }),
  );
  return { samples, rps: (n / (nowMs() - t0)) * 1000 };
}

/**
 * The settings of a bench's `serve` with real sandboxes and an OpenAI-shaped scripted model:
 * its own data folder and image tag, pool and log level as given, fixed secrets (bench only).
 */
export function benchServeEnv(
  o: { dataDir: string; image: string; modelUrl: string; modelKey: string; pool: number },
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    AIRLOCK_DATA_DIR: o.dataDir,
    AIRLOCK_IMAGE: o.image,
    AIRLOCK_PORT: '0',
    AIRLOCK_POOL_SIZE: String(o.pool),
    AIRLOCK_LOG_LEVEL: 'warn',
    AGENT_USER_TOKEN_SECRET: 'bench-agent-user-token-secret-0123',
    MCP_INTERNAL_SECRET: 'bench-mcp-internal-secret-0123456789',
    AIRLOCK_MODEL_PROVIDER: 'openai',
    AIRLOCK_MODEL: 'bench',
    AIRLOCK_MODEL_BASE_URL: o.modelUrl,
    AIRLOCK_MODEL_API_KEY: o.modelKey,
    ...extra,
  };
}

/** Log in to a web app as a browser does (CSRF token, then the password): its cookie and CSRF token. */
export async function benchLogin(
  url: string,
  username: string,
  password: string,
): Promise<{ cookie: string; token: string }> {
  const csrf = await fetch(`${url}/api/auth/csrf`);
  const first = csrf.headers.getSetCookie()[0].split(';')[0];
  const pre = ((await csrf.json()) as { csrf_token: string }).csrf_token;
  const login = await fetch(`${url}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie: first, 'x-csrf-token': pre },
    body: JSON.stringify({ username, password }),
  });
  if (login.status !== 200) throw new Error(`login ${username}: ${login.status}`);
  return {
    cookie: login.headers.getSetCookie()[0].split(';')[0],
    token: ((await login.json()) as { csrf_token: string }).csrf_token,
  };
}
