import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Agent, request } from 'undici';
import { atRestEncryptor, hashPassword, loadConfig, silentLogger } from '../core/index.js';
import { createUser } from '../domain/users.js';
import { DbSessionStore, startWebServer } from '../web/index.js';
import { webOnlyServices } from '../test/helpers/app.js';
import { measure, nowMs, stats, type BenchResult } from './lib.js';
import { openDatabase } from '../domain/db/index.js';

const N = 200;
const CONCURRENCY = 8; // connections in the pool
// Logins run one at a time: each one replaces the session the next one presents.
const LOGIN_CONCURRENCY = 1;

/** Login endpoint (scrypt + session write) vs a bare express route in the same process. */
export async function run(): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-bench-'));
  const config = loadConfig({
    AIRLOCK_DATA_DIR: dir,
    AIRLOCK_LOGIN_MAX_FAILURES: '1000',
    MCP_INTERNAL_SECRET: 'bench-secret-0123456789',
    AGENT_USER_TOKEN_SECRET: 'bench-secret-0123456789',
  });
  const database = await openDatabase({ file: join(dir, 'airlock.db') });
  await createUser(database.sql, {
    username: 'bench',
    email: 'bench@example.test',
    passwordHash: await hashPassword('bench-password'),
  });
  const web = await startWebServer(
    {
      config,
      database,
      log: silentLogger(),
      sessions: new DbSessionStore(database.sql),
      encryptor: atRestEncryptor(config),
      services: webOnlyServices(database, atRestEncryptor(config)),
    },
    0,
    '127.0.0.1',
  );
  // A bare express app in the same process: one route, no middleware (the floor of any route).
  const bareApp = express();
  bareApp.get('/ok', (_req, res) => void res.json({ ok: true }));
  const bare = bareApp.listen(0, '127.0.0.1');
  await new Promise((r) => bare.once('listening', r));
  const bareUrl = `http://127.0.0.1:${(bare.address() as AddressInfo).port}`;
  const dispatcher = new Agent({ connections: CONCURRENCY });
  try {
    const bareExpress = await measure(
      N,
      async () => {
        const r = await request(`${bareUrl}/ok`, { dispatcher });
        await r.body.dump();
      },
      LOGIN_CONCURRENCY,
    );
    // The baseline runs at the same (sequential) concurrency as the logins, so the ratio compares like with like.
    const baseline = await measure(
      N,
      async () => {
        const r = await request(`${web.url}/healthz`, { dispatcher });
        await r.body.dump();
      },
      LOGIN_CONCURRENCY,
    );
    // Login regenerates the session: each worker follows its own cookie and CSRF token.
    const csrf = await request(`${web.url}/api/auth/csrf`, { dispatcher });
    let cookie = (csrf.headers['set-cookie'] as string).split(';')[0];
    let token = ((await csrf.body.json()) as { csrf_token: string }).csrf_token;
    const login = await measure(
      N,
      async () => {
        const r = await request(`${web.url}/api/auth/login`, {
          method: 'POST',
          dispatcher,
          headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': token },
          body: JSON.stringify({ username: 'bench', password: 'bench-password' }),
        });
        if (r.statusCode !== 200) throw new Error(`login ${r.statusCode}`);
        cookie = String(r.headers['set-cookie']).split(';')[0];
        token = ((await r.body.json()) as { csrf_token: string }).csrf_token;
      },
      LOGIN_CONCURRENCY,
    );
    // Failed logins (same session and CSRF token, the failure budget is raised): a wrong password
    // for a real user vs an unknown user must cost about the same (no user enumeration by time).
    // Interleaved one by one, so machine load drifts the same way for both.
    const failOnce = async (username: string): Promise<number> => {
      const t0 = nowMs();
      const r = await request(`${web.url}/api/auth/login`, {
        method: 'POST',
        dispatcher,
        headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': token },
        body: JSON.stringify({ username, password: 'not-the-password' }),
      });
      await r.body.dump();
      if (r.statusCode !== 401) throw new Error(`failed login ${r.statusCode}`);
      return nowMs() - t0;
    };
    const wrongSamples: number[] = [];
    const unknownSamples: number[] = [];
    for (let i = 0; i < N / 2; i++) {
      wrongSamples.push(await failOnce('bench'));
      unknownSamples.push(await failOnce(`nobody-${i}`));
    }
    const wrong = stats(wrongSamples);
    const unknown = stats(unknownSamples);
    const e = stats(bareExpress.samples);
    const b = stats(baseline.samples);
    const l = stats(login.samples);
    return {
      name: 'login',
      rows: [
        {
          what: 'bare express app GET /ok (no middleware)',
          n: e.n,
          rps: Math.round(bareExpress.rps),
          p50_ms: e.p50,
          p99_ms: e.p99,
        },
        {
          what: 'our app GET /healthz (full middleware)',
          n: b.n,
          rps: Math.round(baseline.rps),
          p50_ms: b.p50,
          p99_ms: b.p99,
        },
        { what: 'POST /api/auth/login', n: l.n, rps: Math.round(login.rps), p50_ms: l.p50, p99_ms: l.p99 },
        { what: 'login, wrong password', n: wrong.n, p50_ms: wrong.p50, p99_ms: wrong.p99 },
        { what: 'login, unknown user', n: unknown.n, p50_ms: unknown.p50, p99_ms: unknown.p99 },
      ],
      ratios: {
        login_p50_vs_bare_express: l.p50 / e.p50,
        healthz_p50_vs_bare_express: b.p50 / e.p50,
        login_p50_vs_bare: l.p50 / b.p50,
        bare_rps_vs_login_rps: baseline.rps / login.rps,
        unknown_user_p50_vs_wrong_password_p50: unknown.p50 / wrong.p50,
      },
      notes:
        'everything sequential (one request at a time); login cost is dominated by scrypt (N=16384) by design; unknown users verify against a hash made at start',
    };
  } finally {
    await dispatcher.close();
    await new Promise((r) => bare.close(r));
    await web.close(100);
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
