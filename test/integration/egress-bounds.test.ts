/**
 * The egress gateway's own bounds (docs/proxy.md#egress-gateway), met by a client acting as a
 * compromised supervisor: it talks to the session's egress socket directly, skipping the proxy's
 * limits. Requests in the gateway at once per session (GATEWAY_MAX_IN_FLIGHT) and request bytes
 * one session holds (GATEWAY_MAX_SESSION_BYTES) are refused past their bound with 503
 * ERR_PROXY_BUSY at once, and free again when the requests end.
 */
import t from 'tap';
import { connect, type Socket } from 'node:net';
import { GATEWAY_MAX_IN_FLIGHT, GATEWAY_MAX_SESSION_BYTES } from '../../daemon/host/egress.js';
import { MAX_BODY_BYTES } from '../../core/egress/framing.js';
import { rawExchange, startProxyRig } from '../helpers/proxy-rig.js';

const SEND = '/gmail/mail/v1/users/me/messages/send';
const head = (length: number) =>
  `POST ${SEND} HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

/** A request whose body is sent only in part: it stays in the gateway, holding its bytes. */
function partial(path: string, length: number, sent: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(path);
    s.on('error', () => undefined);
    s.once('connect', () => {
      s.write(head(length));
      s.write(Buffer.alloc(sent, 0x20), () => resolve(s));
    });
    s.once('error', reject);
  });
}

const SMALL = head(2) + '{}';
const BIG = Buffer.concat([Buffer.from(head(MAX_BODY_BYTES)), Buffer.alloc(MAX_BODY_BYTES, 0x20)]);

/**
 * Send a whole request until its answer is (or is not) 503: the held requests count from the
 * moment the gateway has read them, which the client cannot see; the deadline bounds the wait.
 */
async function until(
  path: string,
  data: string | Buffer,
  busy: boolean,
  deadlineMs = 15_000,
): Promise<{ status: number; text: string }> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const r = await rawExchange({ path }, data, 20_000);
    if ((r.status === 503) === busy || Date.now() > end) return r;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

t.test('a session past its requests in flight gets 503 ERR_PROXY_BUSY at once; free again after', async (t) => {
  const rig = await startProxyRig(t);
  const held = await Promise.all(Array.from({ length: GATEWAY_MAX_IN_FLIGHT }, () => partial(rig.socketPath, 100, 10)));
  const busy = await until(rig.socketPath, SMALL, true);
  t.equal(busy.status, 503, 'one more request is refused');
  t.match(busy.text, /ERR_PROXY_BUSY/);
  t.match(busy.text, new RegExp(`at most ${GATEWAY_MAX_IN_FLIGHT} requests`));
  const before = rig.upstream.requests.length;
  for (const s of held) s.end(Buffer.alloc(90, 0x20));
  const after = await until(rig.socketPath, SMALL, false);
  t.not(after.status, 503, 'the slots are free again once the held requests end');
  t.ok(rig.upstream.requests.length > before, 'and requests reach the upstream again');
});

t.test('a session past its request bytes gets 503 ERR_PROXY_BUSY; free again after', async (t) => {
  const rig = await startProxyRig(t);
  const each = MAX_BODY_BYTES - 1024;
  const n = Math.floor(GATEWAY_MAX_SESSION_BYTES / each);
  const held = await Promise.all(Array.from({ length: n }, () => partial(rig.socketPath, MAX_BODY_BYTES, each)));
  // One more that would pass the session's bytes, read in full: refused on the byte that passes.
  const more = await until(rig.socketPath, BIG, true);
  t.equal(
    more.status,
    503,
    `${n} requests of ${each} bytes held: the next one passes the session's ${GATEWAY_MAX_SESSION_BYTES} bytes`,
  );
  t.match(more.text, /ERR_PROXY_BUSY/);
  for (const s of held) s.destroy();
  const after = await until(rig.socketPath, BIG, false);
  t.not(after.status, 503, 'the bytes are free again once the held requests are gone');
});
