/**
 * The egress socket's connection caps under attack (docs/security.md, "root in the container";
 * docs/proxy.md, Connection caps): root inside a real sandbox makes 50,000 connection attempts to
 * /run/airlock/egress.sock, keeping every connection it gets open and sending nothing. The daemon
 * (this process: serve runs in it) keeps its open files under its baseline plus the session's cap;
 * while the attack runs, /healthz and another user's chat are polled and answer every time; the
 * log has a bounded number of lines about it (one per burst, not one per connection).
 */
import t from 'tap';
import { readdirSync } from 'node:fs';
import { hashPassword } from '../../core/index.js';
import { createUser } from '../../domain/users.js';
import { Client } from '../helpers/client.js';
import { streamTurn, waitFor } from '../helpers/chat.js';
import { DEFAULT_EGRESS_CAPS } from '../../daemon/host/egress-conns.js';
import { chatRig } from './chat-e2e-rig.js';
import { dockerOrSkip, ensureTestImage, execIn } from './helpers.js';

const ATTEMPTS = 50_000;
/**
 * Root's flood, run in the sandbox: at most 256 connection attempts outstanding, each connection
 * held open and never written to until the gateway closes it. At its close each is counted:
 * closed with nothing received (refused at accept), closed after an answer (kept, then the 408 of
 * the headers timeout), or never connected.
 */
const FLOOD = `
const net = require('net');
const N = Number(process.env.ATTEMPTS);
let started = 0, done = 0, kept = 0, refused = 0, errors = 0;
const finish = () => { console.log(JSON.stringify({ started, kept, refused, errors })); process.exit(0); };
const one = () => {
  if (started >= N) return;
  started++;
  const s = net.connect('/run/airlock/egress.sock');
  let got = 0, connected = false;
  s.on('connect', () => { connected = true; });
  s.on('data', (d) => { got += d.length; });
  s.on('error', () => {});
  s.on('close', () => {
    if (!connected) errors++; else if (got) kept++; else refused++;
    if (++done === N) finish(); else one();
  });
};
for (let i = 0; i < 256; i++) one();
`;

const docker = await dockerOrSkip(t);
if (docker) {
  const image = await ensureTestImage(docker);
  const { start } = chatRig(docker, image);

  t.test(
    "root in a sandbox floods its egress socket: open files stay bounded, /healthz and another user's chat answer",
    async (t) => {
      const { d, c, logs } = await start(t, { AIRLOCK_MODEL_PROVIDER: 'demo', AIRLOCK_LOG_LEVEL: 'info' });
      // Alice's sandbox is the attacker's; Bob's chat is the other user's, warm before the attack.
      const first = await streamTurn(c, { message: 'hi' });
      t.equal(first.events.at(-1)?.stop_reason, 'end_turn');
      const attacker = d.runtime!.sessions.list().find((s) => s.sessionId === first.events.at(-1).session_id)!;
      await createUser(d.database.sql, {
        username: 'bob',
        email: 'bob@example.test',
        passwordHash: await hashPassword('bob-password'),
      });
      const bob = new Client(d.web.url);
      t.equal((await bob.login('bob', 'bob-password')).status, 200);
      const bobFirst = await streamTurn(bob, { message: 'hi' });
      t.equal(bobFirst.events.at(-1)?.stop_reason, 'end_turn', "bob's chat answers before the attack");
      const bobSession = bobFirst.events.at(-1).session_id as string;

      const fds = () => readdirSync('/proc/self/fd').length;
      const baseline = fds();
      const linesBefore = logs.lines.length;
      let attacking = true;
      const t0 = Date.now();
      const attack = execIn(docker, attacker.containerId, ['/usr/local/bin/node', '-e', FLOOD], {
        user: '0',
        env: [`ATTEMPTS=${ATTEMPTS}`],
      }).finally(() => (attacking = false));

      // While it runs: the daemon's open files, /healthz and Bob's chat, polled until it ends.
      let maxFds = baseline;
      let maxConns = 0;
      const health: number[] = [];
      const bobTurns: string[] = [];
      // Paced polls (waitFor, every 100 ms and 250 ms): the pollers must not be the load themselves.
      const watch = waitFor(
        async () => {
          maxFds = Math.max(maxFds, fds());
          maxConns = Math.max(maxConns, d.egressGateway.openConnections);
          health.push((await fetch(`${d.web.url}/healthz`)).status);
          return !attacking;
        },
        'the attack to end (healthz poll)',
        1_200_000,
        100,
      );
      const chat = waitFor(
        async () => {
          const r = await streamTurn(bob, { message: 'hi', session_id: bobSession });
          bobTurns.push(r.events.at(-1)?.stop_reason ?? `status ${r.status}`);
          return !attacking;
        },
        "the attack to end (bob's chat)",
        1_200_000,
        250,
      );
      const result = await attack;
      await Promise.all([watch, chat]);
      const s = JSON.parse(result.stdout) as { started: number; kept: number; refused: number; errors: number };
      t.equal(
        s.started,
        ATTEMPTS,
        `root made ${ATTEMPTS} connection attempts (${JSON.stringify(s)}, ${Date.now() - t0} ms)`,
      );
      t.ok(s.refused > ATTEMPTS * 0.9, 'nearly all of them were closed at accept, with nothing read or answered');
      t.ok(
        maxConns <= DEFAULT_EGRESS_CAPS.perSession,
        `the gateway never held more than the session's cap (${maxConns})`,
      );
      // The documented bound: the daemon's baseline plus the session's cap; the rest of the margin
      // is the test's own polling (a /healthz fetch, Bob's stream, the exec's attach).
      t.ok(
        maxFds <= baseline + DEFAULT_EGRESS_CAPS.perSession + 64,
        `the daemon's open files stayed bounded: ${baseline} before, at most ${maxFds} during`,
      );
      t.ok(
        health.length > 0 && health.every((h) => h === 200),
        `/healthz answered every one of ${health.length} polls`,
      );
      t.ok(
        bobTurns.length > 0 && bobTurns.every((r) => r === 'end_turn'),
        `another user's chat answered throughout (${bobTurns.length} turns: ${[...new Set(bobTurns)].join(', ')})`,
      );
      // Bob's turns log at debug (the rig's level); the attacker's session is what must stay quiet.
      const seconds = Math.ceil((Date.now() - t0) / 1000);
      const about = logs.lines.slice(linesBefore).filter((l) => l.includes(attacker.sessionId!));
      const capLines = about.filter((l) => l.includes('connection cap reached'));
      t.ok(capLines.length >= 1, 'the refusals were logged');
      t.ok(
        capLines.length <= seconds + 1,
        `one line per burst (${capLines.length} over ${seconds} s), not one per connection`,
      );
      t.ok(about.length < 100, `the attacker's session logged ${about.length} lines in all during the attack`);
    },
  );
}
