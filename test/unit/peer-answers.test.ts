/**
 * Data read from HTTP bodies and the container engine's API is checked, not cast: another node's
 * answer (core/node-client.ts, through daemon/host/fleet.ts nodeRequest), a token endpoint's answer (core/accounts.ts), the
 * engine's container inspect and log answers (daemon/runtime/docker-driver.ts). A malformed
 * answer is refused with a catalogued code whose message names the failing field, never its
 * value. Real HTTP servers on 127.0.0.1; nothing of ours is stubbed.
 */
import t from 'tap';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig, revokeToken, Secret, tokenRequest } from '../../core/index.js';
import { nodeRequest } from '../../daemon/host/fleet.js';
import { demuxLogs, sandboxDetailsOf } from '../../daemon/runtime/docker-driver.js';

const SECRET_VALUE = 'value-never-in-a-message-4b1e';

/** An HTTP server on 127.0.0.1 answering every request with `answer(req)`; resolves its base URL. */
async function answering(
  t: { teardown(fn: () => void): void },
  answer: (req: IncomingMessage) => { status: number; body: string },
): Promise<string> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      const a = answer(req);
      res.writeHead(a.status, { 'content-type': 'application/json' }).end(a.body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

t.test("another node's answer: result, coded error, anything else refused", async (t) => {
  const config = loadConfig({
    AIRLOCK_NODE_ID: 'node-a',
    AIRLOCK_NODE_SECRET: 'x'.repeat(40),
    AIRLOCK_FLEET_ALLOW_HTTP: 'true',
  });
  const answers: Record<string, { status: number; body: string }> = {
    '/ok': { status: 200, body: JSON.stringify({ result: { state: 'live' } }) },
    '/coded': {
      status: 404,
      body: JSON.stringify({ error: { code: 'ERR_SESSION_NOT_FOUND', message: 'no such session' } }),
    },
    '/uncoded': { status: 500, body: JSON.stringify({ error: { code: 7, message: SECRET_VALUE } }) },
    '/list': { status: 200, body: JSON.stringify([SECRET_VALUE]) },
    '/text': { status: 200, body: SECRET_VALUE },
  };
  const base = await answering(t, (req) => answers[req.url ?? ''] ?? { status: 500, body: '' });
  const url = { id: 'node-b', url: base };
  t.same(await nodeRequest(config, url, 'POST', '/ok', {}), { state: 'live' });
  await t.rejects(
    nodeRequest(config, url, 'POST', '/coded', {}),
    { code: 'ERR_SESSION_NOT_FOUND', status: 404 },
    "a coded error keeps its code; the status is the catalogue's",
  );
  await t.rejects(nodeRequest(config, url, 'POST', '/uncoded', {}), { code: 'ERR_NODE_UNREACHABLE', status: 503 });
  for (const path of ['/list', '/text']) {
    const err = await nodeRequest(config, url, 'POST', path, {}).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.match(err, { code: 'ERR_NODE_BAD_ANSWER', status: 502 }, `${path}: a success that is not {result} is refused`);
    t.notMatch(
      String((err as Error | undefined)?.message),
      SECRET_VALUE,
      `${path}: the message does not carry the body`,
    );
  }
});

t.test("a token endpoint's answer: checked fields, a malformed grant refused with ERR_ACCOUNT_OAUTH", async (t) => {
  const answers: Record<string, { status: number; body: string }> = {
    full: {
      status: 200,
      body: JSON.stringify({
        access_token: 'at-1',
        expires_in: 1200,
        refresh_token: 'rt-1',
        scope: 's',
        token_type: 'Bearer',
      }),
    },
    minimal: { status: 200, body: JSON.stringify({ access_token: 'at-2' }) },
    'string-expiry': {
      status: 200,
      body: JSON.stringify({ access_token: 'at-3', expires_in: '900', token_type: 'Bearer' }),
    },
    'number-token': { status: 200, body: JSON.stringify({ access_token: 42, expires_in: 3600, token_type: 'Bearer' }) },
    'bad-expiry': {
      status: 200,
      body: JSON.stringify({ access_token: 'at-4', expires_in: SECRET_VALUE, token_type: 'Bearer' }),
    },
    refused: { status: 400, body: JSON.stringify({ error: 'invalid_grant' }) },
    'odd-error': { status: 400, body: JSON.stringify({ error: SECRET_VALUE }) },
    down: { status: 503, body: 'not json' },
  };
  const url = await answering(t, (req) => answers[(req.url ?? '').slice(1)] ?? { status: 500, body: '' });
  const grant = (name: string) =>
    tokenRequest(
      { tokenUrl: `${url}/${name}`, clientId: 'client', clientSecret: new Secret('cs') },
      { grant_type: 'refresh_token', refresh_token: 'rt' },
    );
  t.same(await grant('full'), {
    access_token: 'at-1',
    expires_in: 1200,
    refresh_token: 'rt-1',
    scope: 's',
    token_type: 'Bearer',
  });
  t.same(
    await grant('minimal'),
    { access_token: 'at-2', expires_in: 3600, token_type: 'Bearer' },
    'defaults: an hour, Bearer',
  );
  t.equal((await grant('string-expiry')).expires_in, 900, 'a numeric string expiry is read as a number');
  await t.rejects(grant('number-token'), {
    code: 'ERR_ACCOUNT_OAUTH',
    status: 502,
    details: { oauth_error: 'http_200' },
  });
  await t.rejects(grant('bad-expiry'), { code: 'ERR_ACCOUNT_OAUTH', details: { oauth_error: 'http_200' } });
  await t.rejects(grant('refused'), {
    code: 'ERR_ACCOUNT_OAUTH',
    retryable: false,
    details: { oauth_error: 'invalid_grant' },
  });
  await t.rejects(
    grant('odd-error'),
    { code: 'ERR_ACCOUNT_OAUTH', details: { oauth_error: 'http_400' } },
    'an error name that is not plain is not echoed',
  );
  await t.rejects(grant('down'), { code: 'ERR_ACCOUNT_OAUTH', retryable: true, details: { oauth_error: 'http_503' } });

  const revokes: Record<string, { status: number; body: string }> = {
    gone: { status: 400, body: JSON.stringify({ error: 'invalid_token' }) },
    odd: { status: 400, body: JSON.stringify({ error: [SECRET_VALUE] }) },
  };
  const rurl = await answering(t, (req) => revokes[(req.url ?? '').slice(1)] ?? { status: 200, body: '' });
  t.same(await revokeToken(`${rurl}/ok`, 'tok'), { revoked: true });
  t.same(await revokeToken(`${rurl}/gone`, 'tok'), { revoked: true, reason: 'already invalid' });
  t.same(await revokeToken(`${rurl}/odd`, 'tok'), { revoked: false, reason: 'http_400' });
});

/** An inspect answer as the engine gives it (the fields the daemon reads, and one more). */
function inspectAnswer(): Record<string, any> {
  return {
    Id: 'c1',
    Name: '/airlock-session-s1-3',
    Config: { Image: 'airlock-sandbox:latest', Labels: { 'airlock.session': 's1' } },
    State: { Status: 'running', StartedAt: '2026-01-01T00:00:00Z' },
    HostConfig: {
      NetworkMode: 'none',
      ReadonlyRootfs: true,
      CapDrop: ['ALL'],
      CapAdd: ['SETUID', 'SETGID'],
      SecurityOpt: ['no-new-privileges'],
      PidsLimit: 256,
      Memory: 1024,
      NanoCpus: 1e9,
      Runtime: 'runc',
    },
  };
}

t.test("the engine's container inspect answer is checked", async (t) => {
  t.same(sandboxDetailsOf(inspectAnswer()), {
    name: 'airlock-session-s1-3',
    image: 'airlock-sandbox:latest',
    status: 'running',
    startedAt: '2026-01-01T00:00:00Z',
    labels: { 'airlock.session': 's1' },
    hostConfig: {
      networkMode: 'none',
      readonlyRootfs: true,
      capDrop: ['ALL'],
      capAdd: ['SETUID', 'SETGID'],
      securityOpt: ['no-new-privileges'],
      pidsLimit: 256,
      memory: 1024,
      nanoCpus: 1e9,
      runtime: 'runc',
    },
  });
  const noLabels = inspectAnswer();
  noLabels.Config.Labels = null;
  t.same(sandboxDetailsOf(noLabels).labels, {}, 'null labels read as none');

  const noState = inspectAnswer();
  delete noState.State;
  t.throws(() => sandboxDetailsOf(noState), { code: 'ERR_RUNTIME_BAD_ANSWER', status: 502, message: /State/ });
  const badLabel = inspectAnswer();
  badLabel.Config.Labels = { 'airlock.session': 7 };
  t.throws(() => sandboxDetailsOf(badLabel), { code: 'ERR_RUNTIME_BAD_ANSWER', message: /Config\.Labels/ });
  const badName = inspectAnswer();
  badName.Name = { value: SECRET_VALUE };
  try {
    sandboxDetailsOf(badName);
    t.fail('a malformed name is refused');
  } catch (err) {
    t.match(err, { code: 'ERR_RUNTIME_BAD_ANSWER', message: /Name/ });
    t.notMatch((err as Error).message, SECRET_VALUE, 'the message names the field, not its value');
  }
  t.throws(() => sandboxDetailsOf(null), { code: 'ERR_RUNTIME_BAD_ANSWER' });
});

t.test("the engine's log answer: frames split by stream; anything but bytes refused", async (t) => {
  const frame = (stream: number, text: string) => {
    const body = Buffer.from(text);
    const head = Buffer.alloc(8);
    head[0] = stream;
    head.writeUInt32BE(body.length, 4);
    return Buffer.concat([head, body]);
  };
  const out = { stdout: [] as string[], stderr: [] as string[] };
  const sink = {
    stdout: (c: Buffer) => out.stdout.push(c.toString()),
    stderr: (c: Buffer) => out.stderr.push(c.toString()),
  };
  demuxLogs(Buffer.concat([frame(1, 'ready\n'), frame(2, 'warn\n'), frame(1, 'bye\n')]), sink);
  t.same(out, { stdout: ['ready\n', 'bye\n'], stderr: ['warn\n'] });
  t.throws(() => demuxLogs('ready\n', sink), { code: 'ERR_RUNTIME_BAD_ANSWER', status: 502 });
  t.throws(
    () => demuxLogs({ pipe() {} }, sink),
    { code: 'ERR_RUNTIME_BAD_ANSWER' },
    'a stream (follow mode) is not what this reads',
  );
});
