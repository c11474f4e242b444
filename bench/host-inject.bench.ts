import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { pathToFileURL } from 'node:url';
import { Agent, request } from 'undici';
import { silentLogger } from '../core/index.js';
import type { MailPolicy, ProfileRoute } from '../core/sandbox-protocol.js';
import { EgressGatewayService, egressTarget } from '../daemon/host/egress.js';
import { buildProfile } from '../daemon/host/overlay.js';
import { start as startUpstream } from '../emulator/fake-upstream.js';
import { startCredentialProxy } from '../proxy/index.js';
import { round, stats, type BenchResult } from './lib.js';
import { googleRoutesTo, megabyteMailBody } from './rig.js';

const N = 400;
const WARMUP = 30;
const SHEET = '/sheets/v4/spreadsheets/sheet-1/values/Sheet1!A1:B3?majorDimension=ROWS';
const MAIL = '/gmail/mail/v1/users/me/messages/send';
/** A build of the design before host injection (the proxy injects, the gateway splices CONNECT tunnels). */
const OLD_DIST = process.env.AIRLOCK_BENCH_OLD_DIST ?? '/work/main/dist';

interface Old {
  proxy: { startCredentialProxy(o: Record<string, unknown>): Promise<{ port: number; close(): Promise<void> }> };
  egress: {
    EgressGatewayService: new (o: { log: unknown }) => {
      open(s: string, p: string, allow: string[]): Promise<{ close(): Promise<void> }>;
    };
  };
}

async function loadOld(): Promise<Old | undefined> {
  const p = join(OLD_DIST, 'proxy', 'tunnel.js');
  if (!existsSync(p)) return undefined; // not the old design (or no build there)
  return {
    proxy: (await import(pathToFileURL(join(OLD_DIST, 'proxy', 'index.js')).href)) as Old['proxy'],
    egress: (await import(pathToFileURL(join(OLD_DIST, 'daemon', 'egress.js')).href)) as Old['egress'],
  };
}

/**
 * Host injection vs the design before it, in one run: a Sheets GET and a 1 MiB mail send (send
 * policy on, the hold answered at once) through (a) today's path: proxy → plain HTTP over the
 * egress socket → the gateway admits again, decides the mail, injects, scrubs; (b) the old path,
 * loaded from a build of it (AIRLOCK_BENCH_OLD_DIST): the proxy injects and scrubs, the gateway
 * splices a CONNECT tunnel. Request by request in pairs (alternating which goes first), same
 * fake upstream. Budget: at most +1 ms p50.
 */
export async function run(): Promise<BenchResult | { skipped: string }> {
  const old = await loadOld();
  if (!old) return { skipped: `no build of the old design at ${OLD_DIST} (set AIRLOCK_BENCH_OLD_DIST)` };
  const dir = mkdtempSync(join(tmpdir(), 'airlock-bench-inject-'));
  const upstream = await startUpstream();
  const routes: ProfileRoute[] = googleRoutesTo(upstream.url);
  const token = 'ya29.bench-real-token-0123456789abcdef';
  const tokens = { MAIL_ACCESS_TOKEN: token, SHEETS_ACCESS_TOKEN: token, SEARCH_ACCESS_TOKEN: token };
  const placeholder = 'bench-placeholder-0123456789abcdefghij';
  const mailPolicy: MailPolicy = {
    allow_domains: ['corp.example'],
    block_domains: ['evil.example'],
    other: 'ask',
    max_recipients: 50,
    max_per_hour: 1_000_000,
    approval_timeout_s: 60,
  };
  const profile = buildProfile('bench', 0, routes);
  const newSock = join(dir, 'new.sock');
  const newGw = await new EgressGatewayService({ log: silentLogger() }).open('bench-new', newSock, {
    userId: 1,
    routes,
    tokens,
    mailPolicy,
    hold: async () => ({ allow: true }),
  });
  const fresh = await startCredentialProxy({
    profile,
    getPlaceholder: () => placeholder,
    egressSocket: newSock,
    mailPolicy,
  });
  const oldSock = join(dir, 'old.sock');
  const oldGw = await new old.egress.EgressGatewayService({ log: silentLogger() }).open('bench-old', oldSock, [
    ...new Set(routes.map((r) => egressTarget(r.upstream))),
  ]);
  const before = await old.proxy.startCredentialProxy({
    profile,
    getToken: (n: string) => (tokens as Record<string, string>)[n],
    getPlaceholder: () => placeholder,
    egressSocket: oldSock,
    mailPolicy,
    holdMail: async () => ({ allow: true }),
  });
  const { body, rawBytes } = await megabyteMailBody();
  const dispatcher = new Agent({ connections: 4 });
  const call = async (port: number, kind: 'sheet' | 'mail') => {
    const t0 = process.hrtime.bigint();
    const r = await request(
      `http://127.0.0.1:${port}${kind === 'sheet' ? `/sheets${SHEET.slice('/sheets'.length)}` : MAIL}`,
      {
        method: kind === 'sheet' ? 'GET' : 'POST',
        dispatcher,
        headers: {
          authorization: `Bearer ${placeholder}`,
          ...(kind === 'mail' ? { 'content-type': 'application/json' } : {}),
        },
        ...(kind === 'mail' ? { body } : {}),
      },
    );
    if (r.statusCode !== 200) throw new Error(`${kind} ${r.statusCode}`);
    await r.body.dump();
    upstream.requests.length = 0;
    return Number(process.hrtime.bigint() - t0) / 1e6;
  };
  const pairs = async (kind: 'sheet' | 'mail') => {
    for (let i = 0; i < WARMUP; i++) {
      await call(fresh.port, kind);
      await call(before.port, kind);
    }
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < N; i++) {
      if (i % 2) {
        a.push(await call(before.port, kind));
        b.push(await call(fresh.port, kind));
      } else {
        b.push(await call(fresh.port, kind));
        a.push(await call(before.port, kind));
      }
    }
    return { old: stats(a), now: stats(b), paired: stats(b.map((x, i) => x - a[i])) };
  };
  try {
    const sheet = await pairs('sheet');
    const mail = await pairs('mail');
    const rows = (what: string, r: Awaited<ReturnType<typeof pairs>>) => [
      { what: `${what}, injection in the proxy (before)`, n: r.old.n, rps: 0, p50_ms: r.old.p50, p99_ms: r.old.p99 },
      { what: `${what}, injection on the host (now)`, n: r.now.n, rps: 0, p50_ms: r.now.p50, p99_ms: r.now.p99 },
      {
        what: `${what}, added (p50 difference)`,
        n: r.now.n,
        rps: 0,
        p50_ms: round(r.now.p50 - r.old.p50),
        p99_ms: round(r.now.p99 - r.old.p99),
      },
      { what: `${what}, added (paired)`, n: r.paired.n, rps: 0, p50_ms: r.paired.p50, p99_ms: r.paired.p99 },
    ];
    return {
      name: 'host-inject',
      rows: [...rows('Sheets GET', sheet), ...rows('1 MiB mail send', mail)],
      ratios: { sheet_added_paired_p50_ms: sheet.paired.p50, mail_added_paired_p50_ms: mail.paired.p50 },
      notes: `old path from ${OLD_DIST}; message ${rawBytes} bytes (${body.length} as JSON), send policy on both (the hold answered at once); interleaved pairs, alternating order, sequential`,
    };
  } finally {
    await dispatcher.close();
    await fresh.close();
    await before.close();
    await newGw.close();
    await oldGw.close();
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
