/**
 * CPU per chat with the web app in front, paired against an older build (docs/capacity.md, "CPU
 * per chat", issue 43): two real `airlock serve` child processes, this tree's dist/ ("new") and
 * another checkout's ("old", AIRLOCK_BENCH_BASE_ROOT, built with its own `npx tsc -p .`, its
 * sandbox image AIRLOCK_BENCH_BASE_IMAGE built with its own `airlock image build --tag …`), each on
 * SQLite, pool of one, with the scripted OpenAI-shaped model and the Google emulator as in the load
 * rig. Each is driven over HTTP as a browser does (log in, POST /api/chat/messages, read the
 * NDJSON to its `done`, DELETE the chat): 6-turn chats of the load bench's mix (20 % tool calls,
 * 10 % mails, the rest short answers; a fixed schedule, the same for both builds), then
 * AIRLOCK_BENCH_WEBCPU_LONG warm turns answering ~250 tokens (one chunk a word), then the chat's
 * end. The builds take turns chat by chat, the order swapped every pair (old new, new old, …),
 * AIRLOCK_BENCH_WEBCPU_CHATS chats each (default 10: 60 turns, the mix exact) after one unmeasured
 * chat each.
 *
 * Per phase, CPU-seconds by component (bench/web-cpu-rig.ts): sandbox (the build's containers'
 * cgroups), engine (dockerd, containerd, the build's shims), daemon (the serve process tree).
 * After each phase the bench waits until the build's containers, any new container and the daemon
 * are quiet (the claim's refill ready). Docker API calls (to learn the build's containers) run
 * between readings. Before each chat, BACKGROUND_MS with both builds idle gives the engine's
 * background rate (other work's Docker calls, the daemons' own periodic ones), subtracted from the
 * engine's share of that chat's phases. Needs root and the Docker engine.
 */
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import type Docker from 'dockerode';
import { createDocker } from '../daemon/runtime/index.js';
import * as google from '../emulator/google.js';
import * as openaiModel from '../emulator/model-openai.js';
import { ensureTestImage, sweep } from '../test/docker/helpers.js';
import { scriptedServeEnv } from '../test/helpers/load-rig.js';
import { round, type BenchResult } from './lib.js';
import { Build, cgroupCpu, reading, spent, type Reading, type Split } from './web-cpu-rig.js';
import { unmountUnderSandboxes } from './density.bench.js';

const CHATS = Number(process.env.AIRLOCK_BENCH_WEBCPU_CHATS ?? 10);
const LONG = Number(process.env.AIRLOCK_BENCH_WEBCPU_LONG ?? 5);
const MODEL_MS = Number(process.env.AIRLOCK_BENCH_WEBCPU_MODEL_MS ?? 300);
const TURNS = 6;
/** The load bench's mix as a fixed schedule over a chat's turns: of every 10, 2 tool calls and 1 mail. */
const MIX = ['', '#tool', '', '#mail', '', '', '#tool', '', '', ''];
const MODEL_KEY = 'sk-web-cpu-model-key-0123456789';
/** About 250 tokens: the emulator streams one chunk per word. */
const ANSWER = Array.from({ length: 250 }, (_, i) => `word${i % 50}`).join(' ');
const PHASE_SETTLE_MS = 1500;
const TURN_SETTLE_MS = 300;
/** Quiet: the build's containers, any new one and the daemon used under this much CPU in QUIET_MS. */
const QUIET_S = 0.005;
const QUIET_MS = 500;
const BACKGROUND_MS = 3000;
/** A pair whose engine background (before either chat or after both) passed this, CPU-ms a second, is measured again. */
const BG_MAX = Number(process.env.AIRLOCK_BENCH_WEBCPU_BG_MAX_MS ?? 15) / 1000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The engine's CPU-seconds a second while both builds are idle (the last phase settled). */
async function backgroundRate(b: Build): Promise<number> {
  const a = reading(b.serve);
  await sleep(BACKGROUND_MS);
  const z = reading(b.serve);
  return Math.max(0, (z.engine - a.engine) / ((z.at - a.at) / 1000));
}

function textOf(m: any): string {
  if (typeof m?.content === 'string') return m.content;
  if (Array.isArray(m?.content)) return m.content.map((p: any) => p?.text ?? '').join('');
  return '';
}

/** The scripted model: `#mail` one send_email, `#tool` one fetch_memory, `#long` ~250 tokens, else a short answer. */
function respond(body: any): openaiModel.ModelStep {
  const last = (body.messages ?? []).at(-1);
  const delay_ms = MODEL_MS;
  if (last?.role !== 'user') return { kind: 'reply', text: 'Done: the tool answered.', delay_ms };
  const text = textOf(last);
  const tag = /\[c=([\w-]+) t=(\d+)\]/.exec(text);
  if (text.includes('#long')) return { kind: 'reply', text: ANSWER, delay_ms };
  if (text.includes('#mail') && tag) {
    const args = { to: ['rcpt@example.test'], subject: `${tag[1]}/${tag[2]}`, text: 'a bench mail' };
    return { kind: 'reply', delay_ms, tool_calls: [{ name: 'send_email', arguments: args }] };
  }
  if (text.includes('#tool'))
    return { kind: 'reply', delay_ms, tool_calls: [{ name: 'fetch_memory', arguments: { query: 'load' } }] };
  return { kind: 'reply', text: ['ok, ', 'noted: a short answer ', 'of a few words.'], delay_ms };
}

/** Wait at least `minMs`, then until the build's containers, new containers and its daemon are quiet (with `needNew`: once a new container exists). */
async function settle(b: Build, known: Set<string>, minMs: number, needNew = false): Promise<void> {
  await sleep(minMs);
  const deadline = Date.now() + 30_000;
  let prev = reading(b.serve);
  while (Date.now() < deadline) {
    await sleep(QUIET_MS);
    const cur = reading(b.serve);
    const ids = [...cur.cgroups.keys()].filter((id) => b.mine.has(id) || !known.has(id));
    const used = ids.reduce((s, id) => s + (cur.cgroups.get(id)! - (prev.cgroups.get(id) ?? 0)), 0);
    const hasNew = ids.some((id) => !known.has(id));
    if ((!needNew || hasNew) && used < QUIET_S && cur.daemon - prev.daemon < QUIET_S) return;
    prev = cur;
  }
  process.stderr.write(`web-cpu: ${b.name} not quiet after 30 s; measuring anyway\n`);
}

interface Chat {
  /** The engine's CPU-seconds a second with the builds idle, before this chat. */
  background: number;
  claim: Split;
  /** The refill's own sandbox CPU (the container new in the claim phase). */
  refill: number;
  warm: { kind: string; x: Split }[];
  long: Split[];
  end: Split;
}

/** One chat of a build, phase by phase (see the file's comment). */
async function chat(docker: Docker, b: Build, c: number, label: string): Promise<Chat> {
  const prompt = (k: number, kind: string) => `[c=${b.name}-${label} t=${k}] ${kind} please answer briefly`;
  const kindOf = (k: number) => MIX[(Math.max(0, c) * TURNS + k) % MIX.length];
  await b.refreshMine(docker);
  const background = await backgroundRate(b);
  const phases: { what: string; kind: string; a: Reading; b: Reading; known: Set<string> }[] = [];
  const phase = async (what: string, kind: string, run: () => Promise<void>, minMs: number, needNew = false) => {
    await b.refreshMine(docker);
    const known = new Set(cgroupCpu().keys());
    const a = reading(b.serve);
    await run();
    await settle(b, known, minMs, needNew);
    phases.push({ what, kind, a, b: reading(b.serve), known });
  };
  let sid = '';
  await phase(
    'claim',
    kindOf(0),
    async () => void (sid = (await b.turn(prompt(1, kindOf(0)))).sessionId),
    PHASE_SETTLE_MS,
    true,
  );
  for (let k = 1; k < TURNS; k++)
    await phase('warm', kindOf(k), async () => void (await b.turn(prompt(k + 1, kindOf(k)), sid)), TURN_SETTLE_MS);
  for (let k = 0; k < LONG; k++)
    await phase('long', '#long', async () => void (await b.turn(prompt(TURNS + k + 1, '#long'), sid)), TURN_SETTLE_MS);
  await phase('end', '', () => b.deleteChat(sid), PHASE_SETTLE_MS);
  await b.refreshMine(docker);
  const of = (what: string) => phases.filter((p) => p.what === what);
  const claim = spent(of('claim')[0].a, of('claim')[0].b, b.mine, background);
  const refill = [...claim.byContainer].filter(([id]) => !of('claim')[0].known.has(id)).reduce((s, [, v]) => s + v, 0);
  const split = (p: (typeof phases)[number]): Split => {
    const { sandbox, engine, daemon } = spent(p.a, p.b, b.mine, background);
    return { sandbox, engine, daemon };
  };
  return {
    background,
    claim: split(of('claim')[0]),
    refill,
    warm: of('warm').map((p) => ({ kind: p.kind || 'short', x: split(p) })),
    long: of('long').map(split),
    end: split(of('end')[0]),
  };
}

const zero = (): Split => ({ sandbox: 0, engine: 0, daemon: 0 });
const add = (a: Split, x: Split): Split => ({
  sandbox: a.sandbox + x.sandbox,
  engine: a.engine + x.engine,
  daemon: a.daemon + x.daemon,
});
const scale = (x: Split, k: number): Split => ({ sandbox: x.sandbox * k, engine: x.engine * k, daemon: x.daemon * k });
const mean = (xs: Split[]): Split =>
  xs.length ? scale(xs.reduce(add, zero()), 1 / xs.length) : { sandbox: NaN, engine: NaN, daemon: NaN };
const total = (x: Split) => x.sandbox + x.engine + x.daemon;
const chatTotal = (c: Chat) => total(c.claim) + c.warm.reduce((s, w) => s + total(w.x), 0) + total(c.end);

/** Per component across chats: the median (robust to a burst of other work on the shared engine) or the mean. */
type Agg = (xs: number[]) => number;
const median: Agg = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[(s.length - 1) >> 1] + s[s.length >> 1]) / 2 : NaN;
};
const average: Agg = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
const across = (xs: Split[], agg: Agg): Split => ({
  sandbox: agg(xs.map((x) => x.sandbox)),
  engine: agg(xs.map((x) => x.engine)),
  daemon: agg(xs.map((x) => x.daemon)),
});
/** A chat's own split: claim, its warm turns, its end. */
const chatSplit = (c: Chat): Split => [c.claim, ...c.warm.map((w) => w.x), c.end].reduce(add, zero());

/** A build's phases as the issue splits a chat: the refill, the first turn beyond a warm one, six warm turns, the end. */
function phasesOf(chats: Chat[], agg: Agg): [string, Split][] {
  const claim = across(
    chats.map((c) => c.claim),
    agg,
  );
  // A chat's warm turns averaged first, so each chat weighs the same.
  const warm = across(
    chats.map((c) => mean(c.warm.map((w) => w.x))),
    agg,
  );
  // The refill: the new member's own processes, and the claim phase's engine work beyond a warm turn's (its create and start).
  const refill = { sandbox: agg(chats.map((c) => c.refill)), engine: claim.engine - warm.engine, daemon: 0 };
  const firstBeyond = add(claim, scale(add(refill, warm), -1));
  const byKind = (k: string) =>
    across(
      chats.flatMap((c) => c.warm.filter((w) => w.kind === k).map((w) => w.x)),
      agg,
    );
  const n = (k: string) => chats.reduce((s, c) => s + c.warm.filter((w) => w.kind === k).length, 0);
  return [
    ['claim + first turn, with the refill behind it', claim],
    ['the pool refill (a sandbox start: its own processes, the engine beyond a warm turn)', refill],
    ['the first turn beyond a warm one (the daemon’s share of the refill included)', firstBeyond],
    [`a warm turn of the mix (${TURNS - 1} a chat)`, warm],
    [`a warm turn: short answer (n=${n('short')})`, byKind('short')],
    [`a warm turn: a tool call, fetch_memory (n=${n('#tool')})`, byKind('#tool')],
    [`a warm turn: a mail, send_email (n=${n('#mail')})`, byKind('#mail')],
    [`${TURNS} warm turns`, scale(warm, TURNS)],
    [
      'a warm turn answering ~250 tokens',
      across(
        chats.map((c) => mean(c.long)),
        agg,
      ),
    ],
    [
      'the chat’s end (DELETE, its sandbox removed)',
      across(
        chats.map((c) => c.end),
        agg,
      ),
    ],
    [`a chat: claim and first turn, ${TURNS - 1} more turns, end`, across(chats.map(chatSplit), agg)],
  ];
}

const ms = (s: number) => round(s * 1000, 1);
const shown = (x: Split) => `${ms(x.sandbox)} / ${ms(x.engine)} / ${ms(x.daemon)} = ${ms(total(x))}`;

function rowsOf(old: Chat[], neu: Chat[]): BenchResult['rows'] {
  const [a, b, am, bm] = [phasesOf(old, median), phasesOf(neu, median), phasesOf(old, average), phasesOf(neu, average)];
  const rows: BenchResult['rows'] = [];
  a.forEach(([what, o], i) => {
    const n = b[i][1];
    const r = (x: number, y: number) => (Math.abs(y) < 1e-4 ? '-' : round(x / y, 2));
    rows.push({
      what,
      old_median_ms: shown(o),
      new_median_ms: shown(n),
      new_over_old: `${r(n.sandbox, o.sandbox)} / ${r(n.engine, o.engine)} / ${r(n.daemon, o.daemon)} = ${r(total(n), total(o))}`,
      old_mean_ms: shown(am[i][1]),
      new_mean_ms: shown(bm[i][1]),
    });
  });
  // Each pair's chats: the phases' totals (ms of CPU) and the engine's background before each.
  const brief = (c: Chat) =>
    [total(c.claim), total(mean(c.warm.map((w) => w.x))), total(mean(c.long)), total(c.end), chatTotal(c)]
      .map(ms)
      .join(' / ') + ` (bg ${ms(c.background)} ms/s)`;
  old.forEach((c, i) =>
    rows.push({
      what: `pair ${i + 1}: claim / warm turn / 250-token turn / end / chat`,
      old_median_ms: brief(c),
      new_median_ms: brief(neu[i]),
      new_over_old: round(chatTotal(neu[i]) / chatTotal(c), 2),
    }),
  );
  return rows;
}

/** The serve settings both builds run with (the load rig's, pool of one). */
function serveEnv(model: openaiModel.ModelServer, g: google.GoogleEmulator): Record<string, string> {
  return { ...scriptedServeEnv('web-cpu', model.url, MODEL_KEY, g.url), AIRLOCK_POOL_SIZE: '1' };
}

export async function run(): Promise<BenchResult | { skipped: string }> {
  const baseRoot = process.env.AIRLOCK_BENCH_BASE_ROOT;
  const baseImage = process.env.AIRLOCK_BENCH_BASE_IMAGE;
  if (!baseRoot || !baseImage || !existsSync(resolve(baseRoot, 'dist/daemon/main.js')))
    return { skipped: 'needs AIRLOCK_BENCH_BASE_ROOT (a built checkout) and AIRLOCK_BENCH_BASE_IMAGE (its image)' };
  if (process.getuid?.() !== 0) return { skipped: 'needs root (the cgroups and the engine’s /proc)' };
  const docker = createDocker({ docker: { socketPath: '/var/run/docker.sock', image: 'unused' } }) as unknown as Docker;
  await docker.ping();
  const image = process.env.AIRLOCK_BENCH_IMAGE ?? (await ensureTestImage(docker));
  const here = resolve(new URL('../..', import.meta.url).pathname);
  const model = await openaiModel.start({ apiKey: MODEL_KEY, respond });
  const g = await google.start({ userEmail: 'webcpu@example.test' });
  const old = new Build('old', resolve(baseRoot), baseImage);
  const neu = new Build('new', here, image);
  const load: number[][] = [loadavg().map((l) => round(l, 2))];
  const results = { old: [] as Chat[], new: [] as Chat[] };
  const rejected: string[] = [];
  try {
    for (const b of [old, neu]) {
      await b.start(serveEnv(model, g), g.token);
      await chat(docker, b, -1, 'warmup'); // unmeasured: the user's workspace, the code paths' first runs
    }
    for (let p = 0, tries = 0; p < CHATS && tries < 3 * CHATS; tries++) {
      const got = {} as Record<'old' | 'new', Chat>;
      for (const b of p % 2 === 0 ? [old, neu] : [neu, old]) got[b.name] = await chat(docker, b, p, `${p}x${tries}`);
      const after = await backgroundRate(neu);
      const bg = [got.old.background, got.new.background, after].map((x) => ms(x));
      const line = `old ${ms(chatTotal(got.old))} ms, new ${ms(chatTotal(got.new))} ms, engine background ${bg.join('/')} ms/s`;
      if (Math.max(got.old.background, got.new.background, after) > BG_MAX) {
        rejected.push(`pair ${p + 1} try ${tries + 1}: ${line}`);
        process.stderr.write(`web-cpu pair ${p + 1}: disturbed, again (${line})\n`);
        continue;
      }
      results.old.push(got.old);
      results.new.push(got.new);
      load.push(loadavg().map((l) => round(l, 2)));
      process.stderr.write(`web-cpu pair ${++p}: ${line}\n`);
    }
  } finally {
    for (const b of [old, neu]) {
      await b.stop().catch(() => undefined);
      await sweep(docker, b.owner);
      unmountUnderSandboxes(b.dir);
      rmSync(b.dir, { recursive: true, force: true });
    }
    await model.close();
    await g.close();
  }
  const perChat = (x: Chat[]) => total(across(x.map(chatSplit), median));
  const longTurn = (x: Chat[]) =>
    total(
      across(
        x.map((c) => mean(c.long)),
        median,
      ),
    );
  // Every chat's phases, by component (CPU-seconds), for reading again: bench/results/web-cpu-chats.json.
  const raw = (x: Chat[]) => x.map((c) => ({ ...c, chat: chatSplit(c) }));
  mkdirSync(join(here, 'bench', 'results'), { recursive: true });
  writeFileSync(
    join(here, 'bench', 'results', 'web-cpu-chats.json'),
    JSON.stringify({ at: new Date().toISOString(), old: raw(results.old), new: raw(results.new), rejected }, null, 1),
  );
  const bg = (x: Chat[]) => ms(x.reduce((s, c) => s + c.background, 0) / x.length);
  const mails = (name: string) => g.mailbox.filter((m) => m.subject.startsWith(`${name}-`)).length;
  return {
    name: 'web-cpu',
    rows: [...rowsOf(results.old, results.new), ...rejected.map((what) => ({ what: `disturbed: ${what}` }))],
    ratios: {
      old_chat_cpu_s: round(perChat(results.old), 3),
      new_chat_cpu_s: round(perChat(results.new), 3),
      chat_new_over_old: round(perChat(results.new) / perChat(results.old), 3),
      old_long_turn_ms: ms(longTurn(results.old)),
      new_long_turn_ms: ms(longTurn(results.new)),
      long_turn_new_over_old: round(longTurn(results.new) / longTurn(results.old), 3),
      old_chat_cpu_s_mean: round(average(results.old.map(chatTotal)), 3),
      new_chat_cpu_s_mean: round(average(results.new.map(chatTotal)), 3),
      old_chat_cpu_s_median_of_totals: round(median(results.old.map(chatTotal)), 3),
      new_chat_cpu_s_median_of_totals: round(median(results.new.map(chatTotal)), 3),
      pairs_disturbed_and_measured_again: rejected.length,
      target_chat_met: perChat(results.new) <= 1.1 ? 1 : 0,
      target_long_turn_met: longTurn(results.new) <= 0.04 ? 1 : 0,
    },
    notes: `sandbox / engine / daemon = total, ms of CPU, each component's median (and mean) over ${CHATS} chats a build (paired, order swapped every pair) after one unmeasured chat each; ${TURNS} turns a chat of the load bench's mix (schedule ${MIX.map((k) => k || '-').join(',')}), then ${LONG} warm ~250-token turns (not in the chat's total), then DELETE; model ${MODEL_MS} ms a call; pool 1; the engine's background subtracted, mean ${bg(results.old)} ms/s (old's chats), ${bg(results.new)} ms/s (new's); old = ${resolve(baseRoot)} (${baseImage}), new = ${here} (${image}); mails received old ${mails('old')}, new ${mails('new')}; load average at each pair ${load.map((l) => l.join('/')).join(', ')}.`,
  };
}
