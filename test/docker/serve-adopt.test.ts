/**
 * The daemon restarted on the same data dir: serve() adopts the warm session container and the
 * session keeps working as before the restart. Token rotation is registered again (from the token
 * env names in claim.json), so a refreshed token reaches the adopted supervisor and mail goes
 * out with it; the egress gateway is open again; ending the sandbox stops rotation and its
 * AGENT_USER_TOKEN is refused from then on. A session whose user was deactivated while no daemon
 * ran is removed at start instead of adopted.
 */
import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  createLogger,
  Encryptor,
  hashPassword,
  loadOrCreateEncryptionKey,
  mintAgentUserToken,
  WORKSPACE_SCOPES,
} from '../../core/index.js';
import { createUser } from '../../domain/users.js';
import { AccountStore } from '../../domain/accounts.js';
import { serve, type RunningDaemon } from '../../daemon/serve.js';
import * as google from '../../emulator/google.js';
import * as googleOAuth from '../../emulator/google-oauth.js';
import { Client } from '../helpers/client.js';
import { logSink } from '../helpers/app.js';
import { streamTurn } from '../helpers/chat.js';
import { dataDir, dockerOrSkip, ensureTestImage, execIn, runtimeConfig, sweep, uniqueOwner } from './helpers.js';
import { openDatabase } from '../../domain/db/index.js';
import { dbRun } from '../helpers/db.js';

const CLIENT_ID = 'airlock-test-client';
const CLIENT_SECRET = 'airlock-test-client-secret';

/** A completed offline consent at the OAuth emulator (code + PKCE): real access and refresh tokens. */
async function consent(oauth: googleOAuth.GoogleOAuth): Promise<{ access_token: string; refresh_token: string }> {
  const verifier = randomBytes(32).toString('base64url');
  const redirect = 'http://127.0.0.1:9/callback';
  const u = new URL(oauth.authorizeUrl);
  u.search = new URLSearchParams({
    client_id: CLIENT_ID,
    redirect_uri: redirect,
    response_type: 'code',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    access_type: 'offline',
    scope: WORKSPACE_SCOPES.join(' '),
  }).toString();
  const code = new URL((await fetch(u, { redirect: 'manual' })).headers.get('location')!).searchParams.get('code')!;
  const r = await fetch(oauth.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirect,
      code_verifier: verifier,
      client_id: CLIENT_ID,
      client_secret: CLIENT_SECRET,
    }),
  });
  return (await r.json()) as { access_token: string; refresh_token: string };
}

const docker = await dockerOrSkip(t);
if (docker) {
  const image = await ensureTestImage(docker);
  /** serve() on its own data dir: no pool (cold starts), the demo model, the required secrets. */
  const serveConfig = (dir: string, env: Record<string, string> = {}) =>
    runtimeConfig(dir, image, {
      AIRLOCK_PORT: '0',
      AIRLOCK_POOL_SIZE: '0',
      AIRLOCK_MODEL_PROVIDER: 'demo',
      AGENT_USER_TOKEN_SECRET: 'serve-adopt-agent-user-token-secret',
      MCP_INTERNAL_SECRET: 'serve-adopt-mcp-internal-secret-0123',
      ...env,
    });

  t.test(
    'a restarted daemon adopts the warm session: rotation, egress and the agent-token check carry on',
    async (t) => {
      const dir = dataDir(t);
      const owner = uniqueOwner('serve-adopt');
      t.teardown(() => sweep(docker!, owner));
      const oauth = await googleOAuth.start({
        clientId: CLIENT_ID,
        clientSecret: CLIENT_SECRET,
        email: 'alice@example.test',
      });
      t.teardown(() => oauth.close());
      const grant = await consent(oauth);
      t.ok(grant.refresh_token, 'an offline grant');
      const g = await google.start({ userEmail: 'alice@example.test', acceptTokens: [grant.access_token] });
      t.teardown(() => g.close());
      const config = serveConfig(dir, {
        AIRLOCK_GOOGLE_CLIENT_ID: CLIENT_ID,
        AIRLOCK_GOOGLE_CLIENT_SECRET: CLIENT_SECRET,
        AIRLOCK_GOOGLE_TOKEN_URL: oauth.tokenUrl,
        AIRLOCK_GOOGLE_REVOKE_URL: oauth.revokeUrl,
        AIRLOCK_GOOGLE_MAIL_BASE_URL: g.url,
        AIRLOCK_GOOGLE_SHEETS_BASE_URL: g.url,
        AIRLOCK_GOOGLE_DRIVE_BASE_URL: g.url,
      });
      const logs = logSink();
      const log = createLogger({ level: 'info', destination: logs.stream });

      // ---- the first daemon: a session with a connected account mails once.
      const d1 = await serve(config, { log, runtime: { owner } });
      t.teardown(() => d1.close());
      const user = await createUser(d1.database.sql, {
        username: 'alice',
        email: 'alice@example.test',
        passwordHash: await hashPassword('alice-password'),
      });
      const accountsOf = (d: RunningDaemon) =>
        new AccountStore(d.database.sql, new Encryptor(loadOrCreateEncryptionKey(dir, config.encryptionKey)));
      await accountsOf(d1).connect(user.id, {
        email: 'alice@example.test',
        scopes: [...WORKSPACE_SCOPES],
        accessToken: grant.access_token,
        refreshToken: grant.refresh_token,
        expiresAt: Date.now() + 3600_000,
      });
      const c1 = new Client(d1.web.url);
      t.equal((await c1.login('alice', 'alice-password')).status, 200);
      const first = await streamTurn(c1, { message: 'chart 1 2 3 and email the chart to x@example.test' });
      t.same(
        first.events.filter((e) => e.type === 'tool_end').map((e) => [e.tool, e.ok]),
        [
          ['rasterize_chart', true],
          ['send_email', true],
        ],
      );
      const sessionId: string = first.events.at(-1).session_id;
      const [before] = d1.runtime!.sessions.list().filter((s) => s.sessionId === sessionId);
      t.ok(before, 'a warm sandbox');
      t.same(d1.tokenService.tracked(), [sessionId], 'tracked for rotation at start');
      const claim = readFileSync(join(dir, 'sandboxes', before.slot, 'claim.json'), 'utf8');
      t.same(
        JSON.parse(claim).token_envs.sort(),
        ['MAIL_ACCESS_TOKEN', 'SEARCH_ACCESS_TOKEN', 'SHEETS_ACCESS_TOKEN'],
        'claim.json names the real-token envs',
      );
      t.notOk(
        claim.includes(grant.access_token) || claim.includes(grant.refresh_token),
        'claim.json holds no token value',
      );

      // ---- an ordinary stop (not removeContainers): the session container keeps running.
      await d1.close();
      t.equal(
        (await docker!.getContainer(before.containerId).inspect()).State.Running,
        true,
        'the session container outlives the daemon',
      );

      // ---- the second daemon on the same data dir and owner adopts it.
      const d2 = await serve(config, { log, runtime: { owner } });
      t.teardown(async () => {
        await d2.runtime?.close({ removeContainers: true });
        await d2.close();
      });
      const [adopted] = d2.runtime!.sessions.list().filter((s) => s.sessionId === sessionId);
      t.equal(adopted?.containerId, before.containerId, 'the same container, adopted');
      t.equal(adopted?.adopted, true);
      t.same(d2.tokenService.tracked(), [sessionId], 'the adopted session is tracked for rotation again');
      t.ok(
        readdirSync(join(dir, 'sandboxes', before.slot, 'run')).includes('egress.sock'),
        'the egress socket is open again',
      );

      // The access token nears its end: the rotation pass refreshes it and pushes it into the
      // adopted supervisor. From then on the provider accepts only the new token.
      await accountsOf(d2).saveAccess(user.id, grant.access_token, Date.now() + 60_000);
      const refreshesBefore = oauth.requests.filter(
        (r) => r.path === '/token' && r.params.grant_type === 'refresh_token',
      ).length;
      await d2.tokenService.rotateDue();
      t.equal(
        oauth.requests.filter((r) => r.path === '/token' && r.params.grant_type === 'refresh_token').length,
        refreshesBefore + 1,
        'one refresh grant',
      );
      const fresh = oauth.issued.access.at(-1)!;
      t.not(fresh, grant.access_token, 'a new access token was issued');
      g.acceptTokens([fresh]);
      t.match(
        logs.lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'token rotated into session'),
        [{ sessionId }],
        'rotated into the adopted session',
      );

      const c2 = new Client(d2.web.url);
      t.equal((await c2.login('alice', 'alice-password')).status, 200);
      const after = await streamTurn(c2, {
        message: 'chart 4 5 and email the chart to x@example.test',
        session_id: sessionId,
      });
      t.same(
        after.events.filter((e) => e.type === 'tool_end').map((e) => [e.tool, e.ok]),
        [
          ['rasterize_chart', true],
          ['send_email', true],
        ],
        `the adopted session mails after the rotation ${JSON.stringify(after.events.filter((e) => e.type === 'tool_end' && !e.ok))}`,
      );
      t.equal(
        d2.runtime!.sessions.list().find((s) => s.sessionId === sessionId)?.containerId,
        before.containerId,
        'still the adopted container',
      );
      t.equal(g.mailbox.length, 2, 'mail before the restart and after the rotation');
      const sends = g.requests.filter((q) => q.method === 'POST' && q.path.startsWith('/gmail/'));
      t.equal(
        sends.at(-1)!.headers.authorization,
        `Bearer ${fresh}`,
        'the rotated token went upstream (through the re-opened egress)',
      );
      t.notOk(logs.text().includes(fresh) || logs.text().includes(grant.refresh_token), 'no token in the logs');

      // ---- AGENT_USER_TOKEN is bound to the live session: the sandbox's own token works while the
      // sandbox lives and is refused once it ended.
      // The child gets its token over stdin at claim (in no environ): the test mints one with the
      // same binding (user, live session), as the preparer did for the sandbox.
      const agentToken = mintAgentUserToken(config.agentUserTokenSecret!, { userId: user.id, sessionId });
      const sup = (await d2.runtime!.sessions.inspect(sessionId)).supervisor!;
      const env = await execIn(docker!, before.containerId, [
        '/bin/sh',
        '-c',
        `tr '\\0' '\\n' < /proc/${sup.child_pid}/environ`,
      ]);
      t.notMatch(env.stdout, /AGENT_USER_TOKEN/, 'no token in the child environ');
      const memories = (token: string) =>
        fetch(`${d2.web.url}/api/agent/memories`, { headers: { authorization: `Bearer ${token}` } });
      t.equal((await memories(agentToken!)).status, 200, 'accepted while the session is live');
      const otherSession = mintAgentUserToken(config.agentUserTokenSecret!, {
        userId: user.id,
        sessionId: 'no-such-live-session',
      });
      const refusedOther = await memories(otherSession);
      t.equal(refusedOther.status, 401, 'a valid token of a session without a live sandbox is refused');
      t.equal(((await refusedOther.json()) as { error: { code: string } }).error.code, 'ERR_AGENT_TOKEN_INVALID');

      await d2.runtime!.sessions.kill(sessionId);
      t.same(d2.tokenService.tracked(), [], 'an ended sandbox is no longer rotated into');
      const refused = await memories(agentToken!);
      t.equal(refused.status, 401, "the ended session's token is refused");
      t.equal(((await refused.json()) as { error: { code: string } }).error.code, 'ERR_AGENT_TOKEN_INVALID');
      const minted = mintAgentUserToken(config.agentUserTokenSecret!, { userId: user.id, sessionId });
      t.equal((await memories(minted)).status, 401, 'also a freshly minted token for that ended session');
    },
  );

  t.test(
    'a user deactivated while no daemon ran: the restarted daemon removes the sandbox instead of adopting it',
    async (t) => {
      const dir = dataDir(t);
      const owner = uniqueOwner('serve-adopt-inactive');
      t.teardown(() => sweep(docker!, owner));
      const config = serveConfig(dir);
      const logs = logSink();
      const log = createLogger({ level: 'info', destination: logs.stream });
      const d1 = await serve(config, { log, runtime: { owner } });
      t.teardown(() => d1.close());
      for (const name of ['bob', 'carol'])
        await createUser(d1.database.sql, {
          username: name,
          email: `${name}@example.test`,
          passwordHash: await hashPassword(`${name}-password`),
        });
      const sessionOf = async (name: string) => {
        const c = new Client(d1.web.url);
        t.equal((await c.login(name, `${name}-password`)).status, 200);
        const turn = await streamTurn(c, { message: 'hello' });
        t.equal(turn.events.at(-1).type, 'done');
        const id: string = turn.events.at(-1).session_id;
        return d1.runtime!.sessions.list().find((s) => s.sessionId === id)!;
      };
      const bob = await sessionOf('bob');
      const carol = await sessionOf('carol');
      await d1.close();

      // While no daemon runs, bob is deactivated (as `airlock sync-directory` does when the daemon
      // is down: there is no one to end his sandbox then).
      const offline = await openDatabase({ file: join(dir, 'airlock.db') });
      t.equal(await dbRun(offline.sql, 'UPDATE users SET is_active = 0 WHERE username = ?', 'bob'), 1);
      await offline.close();

      const d2 = await serve(config, { log, runtime: { owner } });
      t.teardown(async () => {
        await d2.runtime?.close({ removeContainers: true });
        await d2.close();
      });
      const live = d2.runtime!.sessions.list().map((s) => s.sessionId);
      t.same(live, [carol.sessionId], "only the active user's session is adopted");
      const gone = await docker!
        .getContainer(bob.containerId)
        .inspect()
        .then(
          () => 200,
          (err: { statusCode?: number }) => err.statusCode,
        );
      t.equal(gone, 404, "the deactivated user's container is gone");
      t.equal((await docker!.getContainer(carol.containerId).inspect()).State.Running, true);
      t.match(
        logs.lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'removed container at start'),
        [{ why: 'its user is no longer active' }],
      );
      t.match(
        await (await fetch(`${d2.web.url}/metrics`)).text(),
        /airlock_sessions_reaped_total\{reason="user_deactivated"\} 1/,
      );
    },
  );
}
