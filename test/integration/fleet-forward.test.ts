/**
 * Forwarding between nodes, in process: two nodes of one fleet on one database (one data
 * folder), the owner behind a recording HTTP relay. A turn's cancel, its events, an approval and
 * an attachment that belong to the other node are sent to it under /api/fleet/…, signed with the
 * node secret and naming the user; the browser's cookie and CSRF token stay on the receiving
 * node; the owner's answer comes back as it gave it. (test/docker/fleet.test.ts covers a new
 * turn, history and a lost node with real processes.)
 */
import t from 'tap';
import { createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NODE_HEADERS } from '../../core/index.js';
import { ownSandbox, registerNode } from '../../domain/fleet.js';
import { addUser, startTestApp, tempDir } from '../helpers/app.js';
import { TEST_ENGINE } from '../helpers/db.js';

const SECRET = 'fleet-forward-test-secret-0123456789abcdef';

t.test(
  `${TEST_ENGINE}: what belongs to another node is forwarded to it, signed, without the browser's cookie or CSRF token`,
  async (t) => {
    const dir = tempDir(t);
    const a = await startTestApp(t, {
      dataDir: dir,
      env: { AIRLOCK_NODE_ID: 'node-a', AIRLOCK_NODE_SECRET: SECRET, AIRLOCK_FLEET_ALLOW_HTTP: 'true' },
    });
    const b = await startTestApp(t, {
      dataDir: dir,
      env: { AIRLOCK_NODE_ID: 'node-b', AIRLOCK_NODE_SECRET: SECRET, AIRLOCK_FLEET_ALLOW_HTTP: 'true' },
    });

    // The owner behind a relay that records what reaches it and passes everything on unchanged.
    const seen: { method: string; url: string; headers: IncomingHttpHeaders }[] = [];
    const answered: number[] = [];
    const relay = createServer((req, res) => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
      const up = httpRequest(new URL(req.url ?? '/', b.url), { method: req.method, headers: req.headers }, (answer) => {
        answered.push(answer.statusCode ?? 0);
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      req.pipe(up);
    });
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
    t.teardown(() => new Promise<void>((r) => relay.close(() => r())));
    const relayUrl = `http://127.0.0.1:${(relay.address() as AddressInfo).port}`;

    await registerNode(a.database.sql, { id: 'node-a', url: a.url, version: 't', capacity: 4 });
    await registerNode(a.database.sql, { id: 'node-b', url: relayUrl, version: 't', capacity: 4 });
    const alice = await addUser(a.database, 'alice', 'alice-password-0123');
    await ownSandbox(a.database.sql, {
      sessionId: 'sess-on-b',
      userId: alice.id,
      nodeId: 'node-b',
      containerId: 'c-b',
      state: 'live',
    });
    const c = a.client();
    t.equal((await c.login('alice', 'alice-password-0123')).status, 200);

    const calls: [string, string, string, unknown?][] = [
      ['a cancel', 'POST', '/api/chat/sessions/sess-on-b/turns/turn-1/cancel', {}],
      ["a turn's events", 'GET', '/api/chat/sessions/sess-on-b/turns/turn-1/events?after=0'],
      ['an approval', 'POST', '/api/chat/sessions/sess-on-b/approvals/hold-1', { decision: 'deny' }],
      ["a held send's preview", 'GET', '/api/chat/sessions/sess-on-b/approvals/hold-1/preview'],
      ["a held send's image", 'GET', '/api/chat/sessions/sess-on-b/approvals/hold-1/attachments/0'],
      ['an attachment this node does not have', 'GET', '/api/chat/attachments/chart-on-b.png'],
    ];
    for (const [what, method, path, body] of calls) {
      const before = seen.length;
      const r = await c.json(method, path, body);
      t.equal(seen.length, before + 1, `${what}: sent to the owner once`);
      const got = seen.at(-1)!;
      t.match(got.url, /^\/api\/fleet\//, `${what}: under /api/fleet/ (${got.url})`);
      t.equal(got.method, method, `${what}: same method`);
      t.notOk('cookie' in got.headers, `${what}: no cookie`);
      t.notOk('x-csrf-token' in got.headers, `${what}: no CSRF token`);
      t.equal(got.headers[NODE_HEADERS.node], 'node-a', `${what}: signed by the receiving node`);
      t.equal(got.headers[NODE_HEADERS.user], String(alice.id), `${what}: naming the user`);
      t.match(got.headers[NODE_HEADERS.signature], /\S/, `${what}: with a signature`);
      t.equal(
        r.status,
        answered.at(-1),
        `${what}: the owner's status comes back (${r.status} ${(r.body as { error?: { code?: string } })?.error?.code ?? ''})`,
      );
      t.not(r.status, 401, `${what}: the owner accepted the signature`);
      t.equal(r.res.headers.get('x-airlock-served-by'), 'node-b', `${what}: answered by node-b`);
    }

    // The same requests for a session this node owns stay here.
    await ownSandbox(a.database.sql, {
      sessionId: 'sess-on-a',
      userId: alice.id,
      nodeId: 'node-a',
      containerId: 'c-a',
      state: 'live',
    });
    const before = seen.length;
    await c.json('POST', '/api/chat/sessions/sess-on-a/turns/turn-1/cancel', {});
    t.equal(seen.length, before, 'a session this node owns is not forwarded');
  },
);
