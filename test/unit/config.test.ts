import t from 'tap';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { inspect } from 'node:util';
import { configProblems, isAppError, loadConfig, SERVE_REQUIRED } from '../../core/index.js';

t.test('defaults', async (t) => {
  const c = loadConfig({}, { cwd: '/srv' });
  t.equal(c.dataDir, '/srv/.airlock');
  t.equal(c.host, '127.0.0.1');
  t.equal(c.port, 8080);
  t.equal(c.publicOrigin, 'http://127.0.0.1:8080');
  t.equal(c.model.provider, 'demo');
  t.ok(Object.isFrozen(c) && Object.isFrozen(c.sandbox), 'frozen');
});

t.test('every problem is listed at once', async (t) => {
  try {
    loadConfig(
      {
        AIRLOCK_PORT: 'x',
        AIRLOCK_SESSION_IDLE_S: '-4',
        AIRLOCK_PUBLIC_ORIGIN: 'nope',
        AIRLOCK_MODEL_PROVIDER: 'openai',
        MCP_INTERNAL_SECRET: 'short',
      },
      { require: SERVE_REQUIRED },
    );
    t.fail('should throw');
  } catch (err) {
    t.ok(isAppError(err, 'ERR_CONFIG_INVALID'));
    const p = isAppError(err) ? configProblems(err).join('\n') : '';
    for (const name of [
      'AIRLOCK_PORT',
      'AIRLOCK_SESSION_IDLE_S',
      'AIRLOCK_PUBLIC_ORIGIN',
      'AGENT_USER_TOKEN_SECRET',
      'MCP_INTERNAL_SECRET',
      'AIRLOCK_MODEL_BASE_URL',
    ]) {
      t.match(p, name, `names ${name}`);
    }
    t.equal(isAppError(err) && err.status, 500);
  }
});

t.test('config file, env wins, unknown keys refused', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
  const file = join(dir, 'airlock.json');
  writeFileSync(file, JSON.stringify({ AIRLOCK_PORT: 9000, AIRLOCK_HOST: '0.0.0.0' }));
  const c = loadConfig({ AIRLOCK_CONFIG: file, AIRLOCK_HOST: '127.0.0.2' });
  t.equal(c.port, 9000);
  t.equal(c.host, '127.0.0.2');
  writeFileSync(file, JSON.stringify({ AIRLOCK_PROT: 1 }));
  t.throws(() => loadConfig({ AIRLOCK_CONFIG: file }), { code: 'ERR_CONFIG_INVALID' });
});

t.test('secrets print as [redacted]', async (t) => {
  const s = 'super-secret-value-123456';
  const c = loadConfig({ MCP_INTERNAL_SECRET: s, AGENT_USER_TOKEN_SECRET: s });
  const printed = [
    JSON.stringify(c),
    inspect(c, { depth: 10 }),
    String(c.mcpInternalSecret),
    `${c.agentUserTokenSecret}`,
  ].join('\n');
  t.notOk(printed.includes(s));
  t.match(printed, /\[redacted\]/);
  t.equal(c.mcpInternalSecret!.reveal(), s);
  t.ok(c.mcpInternalSecret!.equals(s));
  t.notOk(c.mcpInternalSecret!.equals(s + 'x'));
});

t.test('AIRLOCK_ENCRYPTION_KEY is checked at start: 32 bytes, hex or base64', async (t) => {
  const hex = 'ab'.repeat(32);
  const b64 = Buffer.alloc(32, 7).toString('base64');
  t.ok(loadConfig({ AIRLOCK_ENCRYPTION_KEY: hex }).encryptionKey, 'hex');
  t.ok(loadConfig({ AIRLOCK_ENCRYPTION_KEY: b64 }).encryptionKey, 'base64');
  for (const bad of ['too-short', 'ab'.repeat(31), Buffer.alloc(16).toString('base64'), 'zz'.repeat(32)]) {
    try {
      loadConfig({ AIRLOCK_ENCRYPTION_KEY: bad, AIRLOCK_PORT: 'x' });
      t.fail(`accepted ${bad}`);
    } catch (err) {
      const problems = isAppError(err) ? configProblems(err) : [];
      t.ok(
        problems.some((p) => p.startsWith('AIRLOCK_ENCRYPTION_KEY: must be 32 bytes')),
        `refused ${bad.slice(0, 12)}…`,
      );
      t.ok(
        problems.some((p) => p.startsWith('AIRLOCK_PORT')),
        'listed with the other problems',
      );
      t.notOk(problems.join(' ').includes(bad), 'the key itself is not echoed');
    }
  }
});

t.test('logged errors carry kind, code and message, never a stack', async (t) => {
  const { createLogger } = await import('../../core/index.js');
  const lines: string[] = [];
  const log = createLogger({
    level: 'info',
    destination: { write: (l: string) => void lines.push(l) } as unknown as NodeJS.WritableStream,
  });
  const inner = Object.assign(new Error('disk full'), { code: 'ENOSPC' });
  log.error({ err: new Error('request failed badly', { cause: inner }) }, 'boom');
  const o = JSON.parse(lines[0]) as { err: Record<string, unknown> };
  t.same(o.err, {
    type: 'Error',
    message: 'request failed badly',
    cause: { type: 'Error', message: 'disk full', code: 'ENOSPC' },
  });
  t.notMatch(lines[0], /at .*\.js:\d+/, 'no stack frame');
});

t.test('per-user sandbox cap: a quarter of the host cap by default, at least 1; settable', async (t) => {
  t.equal(loadConfig({}).sandbox.maxPerUser, 8, 'default: 32 / 4');
  t.equal(loadConfig({ AIRLOCK_MAX_SESSIONS: '1' }).sandbox.maxPerUser, 1, 'at least 1');
  t.equal(loadConfig({ AIRLOCK_MAX_SESSIONS: '10' }).sandbox.maxPerUser, 3, 'rounded up');
  t.equal(loadConfig({ AIRLOCK_MAX_SANDBOXES_PER_USER: '5' }).sandbox.maxPerUser, 5);
  t.throws(() => loadConfig({ AIRLOCK_MAX_SANDBOXES_PER_USER: '0' }), /AIRLOCK_MAX_SANDBOXES_PER_USER/);
});

t.test('https between nodes: TLS files both or neither; the node URL follows', async (t) => {
  t.throws(() => loadConfig({ AIRLOCK_TLS_CERT_FILE: '/x/cert.pem' }), /set both or neither/);
  const c = loadConfig({
    AIRLOCK_TLS_CERT_FILE: '/x/cert.pem',
    AIRLOCK_TLS_KEY_FILE: '/x/key.pem',
    AIRLOCK_PORT: '8443',
  });
  t.same(c.tls, { certFile: '/x/cert.pem', keyFile: '/x/key.pem' });
  t.equal(c.node.url, 'https://127.0.0.1:8443', 'the default node URL is https');
  t.equal(loadConfig({}).node.allowHttp, false, 'plain http between nodes is off by default');
  t.equal(loadConfig({ AIRLOCK_FLEET_ALLOW_HTTP: 'true' }).node.allowHttp, true);
});

t.test('the tool timeout must outlast the mail approval wait', async (t) => {
  t.throws(
    () => loadConfig({ AIRLOCK_TOOL_TIMEOUT_S: '60', AIRLOCK_MAIL_APPROVAL_TIMEOUT_S: '90' }),
    /AIRLOCK_TOOL_TIMEOUT_S: must be at least AIRLOCK_MAIL_APPROVAL_TIMEOUT_S \+ 15/,
  );
  const c = loadConfig({
    AIRLOCK_TOOL_TIMEOUT_S: '60',
    AIRLOCK_MAIL_APPROVAL_TIMEOUT_S: '45',
    AIRLOCK_TURN_TIMEOUT_S: '300',
  });
  t.equal(c.model.toolTimeoutS, 60);
  t.equal(c.model.turnTimeoutS, 300);
  t.same(
    [c.model.connectTimeoutS, c.model.firstByteTimeoutS, c.model.timeoutS, c.model.retries, c.model.retryAfterMaxS],
    [10, 60, 30, 3, 30],
    'the defaults',
  );
});
