/**
 * The daemon's turn backstop (daemon/runtime/turn.ts): an agent that does not end its turn at its
 * own whole-turn bound is cancelled turnBackstopMs later, and the turn ends as the error
 * ERR_TURN_TIMEOUT — never `cancelled`, which the page shows as "Stopped." although the user did
 * not stop anything. Real supervisor over a real control socket; the child is a wedged agent (it
 * never answers a prompt). The turn limit is the smallest the config accepts (10 s), so the
 * backstop fires at 15 s; the user's own stop stays `cancelled`. The page shows an errored turn's
 * sentence (web/ui/src/error-text.tsx: "This answer took too long and was stopped."), "Stopped."
 * only for `cancelled` (chat-turn.tsx `problemOf`).
 */
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Supervisor } from '../../supervisor/supervisor.js';
import { SandboxClient } from '../../daemon/runtime/sandbox-client.js';
import { turnBackstopMs, turnIn } from '../../daemon/runtime/turn.js';
import type { Sandbox } from '../../daemon/runtime/sandbox.js';
import { silentLogger, systemClock } from '../../core/index.js';
import type { TurnResult } from '../../core/seams.js';
import { testConfig } from '../helpers/app.js';

// "wedged": never answers, ignores the cancel (the supervisor kills it after its grace).
// "polite": never answers on its own, ends a cancel at once with the partial answer marked as
// stopped (what the real agent sends for a cancel).
const CHILD = `
const rl = require('readline').createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
const mode = process.env.CHILD_MODE;
send({ type: 'ready' });
rl.on('line', (l) => {
  const m = JSON.parse(l);
  if (m.type === 'configure') return send({ type: 'configured' });
  if (m.type === 'prompt') return send({ type: 'event', turn_id: m.turn_id, event: { type: 'text_delta', text: 'partial' } });
  if (m.type === 'cancel' && mode === 'polite')
    send({ type: 'turn_end', turn_id: m.turn_id, stop_reason: 'cancelled', items: [{ role: 'user', content: 'p' }, { role: 'assistant', text: 'partial', toolCalls: [], interrupted: 'stopped' }] });
});
`;

const config = testConfig(mkdtempSync(join(tmpdir(), 'airlock-backstop-data-')), { AIRLOCK_TURN_TIMEOUT_S: '10' });
const log = silentLogger();

async function sandbox(mode: 'wedged' | 'polite'): Promise<Sandbox> {
  const dir = mkdtempSync(join(tmpdir(), `airlock-backstop-${mode}-`));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(
    join(dir, 'profile.json'),
    JSON.stringify({ version: 1, session_id: 's1', proxy: { host: '127.0.0.1', port: 0 }, routes: [] }),
  );
  const sup = new Supervisor({
    controlSocket: join(dir, 'control.sock'),
    profilePath: join(dir, 'profile.json'),
    egressSocket: join(dir, 'egress.sock'),
    childUid: process.getuid!(),
    childGid: process.getgid!(),
    childCommand: ['/usr/bin/env', `CHILD_MODE=${mode}`, process.execPath, '-e', CHILD],
    childCwd: dir,
    exitOnShutdown: false,
  });
  await sup.listen();
  t.teardown(() => sup.shutdown());
  const client = await SandboxClient.connect(join(dir, 'control.sock'));
  t.teardown(() => client.close());
  await client.request({ type: 'start', spec: { session_id: 's1', user_id: 1, placeholders: {}, agent_env: {} } });
  const now = Date.now();
  return {
    slot: mode,
    dir,
    runDir: dir,
    containerId: `c-${mode}`,
    containerName: mode,
    state: 'ready',
    createdAt: now,
    lastUsedAt: now,
    turns: 0,
    adopted: false,
    fromPool: false,
    client,
  };
}

function run(
  sb: Sandbox,
  turnId: string,
  ac = new AbortController(),
  stopOnFirstEvent = false,
): Promise<TurnResult & { ms: number }> {
  const t0 = Date.now();
  // The user's stop comes once the answer has started (an event shows the turn is running).
  const req = {
    userId: 1,
    sessionId: 's1',
    turnId,
    prompt: 'p',
    signal: ac.signal,
    onEvent: () => void (stopOnFirstEvent && ac.abort()),
  };
  return turnIn(sb, req, config, log, systemClock).then((r) => ({ ...r, ms: Date.now() - t0 }));
}

t.equal(turnBackstopMs(600), 630_000, 'the default turn limit keeps its 30 s backstop');
t.equal(turnBackstopMs(10), 15_000, 'a short limit gets a short backstop (at least 5 s)');
t.equal(turnBackstopMs(120), 132_000, 'a tenth of the limit in between');

t.test('the backstop ends a turn the agent did not end as ERR_TURN_TIMEOUT', async (t) => {
  const [wedged, polite] = await Promise.all([sandbox('wedged'), sandbox('polite')]);
  const [w, p] = await Promise.all([run(wedged, 'tw'), run(polite, 'tp')]);
  for (const [name, r] of [
    ['wedged (killed by the supervisor)', w],
    ['polite (honours the cancel)', p],
  ] as const) {
    t.equal(r.stop_reason, 'error', `${name}: an error, not cancelled`);
    t.equal(r.error?.code, 'ERR_TURN_TIMEOUT', `${name}: the code says why`);
    t.match(r.error?.message, /longer than 10 s/, `${name}: the message names the bound`);
    t.ok(r.ms >= 15_000 && r.ms < 15_000 + 12_000, `${name}: ended after the backstop, within its grace (${r.ms} ms)`);
  }
  const last = p.items?.at(-1);
  t.match(
    last,
    { role: 'assistant', text: 'partial', interrupted: 'error' },
    'the kept answer is marked as ended by an error, not stopped by the user',
  );
});

t.test("the user's own stop stays cancelled", async (t) => {
  const sb = await sandbox('polite');
  const out = await run(sb, 'tu', new AbortController(), true);
  t.equal(out.stop_reason, 'cancelled');
  t.notOk(out.error, 'no error for a stop the user asked for');
  t.ok(out.ms < 5_000, `ended at once, not by the backstop (${out.ms} ms)`);
});
