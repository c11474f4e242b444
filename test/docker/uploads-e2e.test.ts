/**
 * An uploaded file, charted by the agent in a real sandbox: the CSV goes in through the upload
 * route (the daemon's own workspace port: the quota image when root), the offline demo model
 * inside a real hardened container calls read_file_table on /workspace/uploads/sales.csv and
 * charts the rows; the sandbox user reads the file, and a formula cell comes back as text.
 */
import t from 'tap';
import { createLogger, hashPassword } from '../../core/index.js';
import { createUser } from '../../domain/users.js';
import { serve } from '../../daemon/serve.js';
import { Client } from '../helpers/client.js';
import { logSink } from '../helpers/app.js';
import { streamTurn } from '../helpers/chat.js';
import { dataDir, dockerOrSkip, ensureTestImage, execIn, runtimeConfig, sweep, uniqueOwner } from './helpers.js';

const docker = await dockerOrSkip(t);
if (docker) {
  const image = await ensureTestImage(docker);

  t.test('the demo model reads an uploaded CSV with read_file_table in the sandbox and charts it', async (t) => {
    const dir = dataDir(t);
    const owner = uniqueOwner('uploads');
    t.teardown(() => sweep(docker!, owner));
    const config = runtimeConfig(dir, image, {
      AIRLOCK_PORT: '0',
      AIRLOCK_POOL_SIZE: '0',
      AIRLOCK_LOG_LEVEL: 'debug',
      AGENT_USER_TOKEN_SECRET: 'uploads-agent-user-token-secret-01',
      MCP_INTERNAL_SECRET: 'uploads-mcp-internal-secret-0123456',
    });
    const logs = logSink();
    const d = await serve(config, {
      log: createLogger({ level: 'debug', destination: logs.stream }),
      runtime: { owner },
    });
    t.teardown(async () => {
      await d.runtime?.close({ removeContainers: true });
      await d.close();
    });
    await createUser(d.database.sql, {
      username: 'alice',
      email: 'alice@example.test',
      passwordHash: await hashPassword('alice-password'),
    });
    const c = new Client(d.web.url);
    t.equal((await c.login('alice', 'alice-password')).status, 200);

    const csv = 'month,sales\nJan,3\nFeb,5\nMar,8\nApr,=HYPERLINK("http://evil.test")\n';
    const up = await fetch(`${c.base}/api/chat/files`, {
      method: 'POST',
      headers: {
        cookie: c.cookieHeader(),
        'x-csrf-token': c.csrf!,
        'content-type': 'application/octet-stream',
        'x-file-name': 'sales.csv',
      },
      body: csv,
    });
    t.equal(up.status, 201, 'uploaded into the workspace');

    const r = await streamTurn(c, { message: 'chart my file sales.csv' });
    const ends = r.events.filter((e) => e.type === 'tool_end');
    t.same(
      ends.map((e) => [e.tool, e.ok]),
      [
        ['read_file_table', true],
        ['render_chart', true],
      ],
      JSON.stringify(ends).slice(0, 600),
    );
    const table = ends[0]?.output as { rows?: string[][] } | undefined;
    t.match(JSON.stringify(table), /\[\\?"Jan\\?",\\?"3\\?"\]/, 'the rows came from the file inside the sandbox');
    t.match(JSON.stringify(table), /'=HYPERLINK/, 'the formula cell came back as text');
    const done = r.events.at(-1);
    t.equal(done.stop_reason, 'end_turn');
    t.match(
      r.events
        .filter((e) => e.type === 'text_delta')
        .map((e) => e.text)
        .join(''),
      /chart of sales\.csv/,
    );

    const sb = d.runtime!.sessions.list().find((s) => s.sessionId === done.session_id);
    t.ok(sb?.containerId, 'a live sandbox');
    const probe = await execIn(
      docker!,
      sb!.containerId!,
      ['sh', '-c', 'id -u; stat -c "%u %a" /workspace/uploads/sales.csv; head -1 /workspace/uploads/sales.csv'],
      { user: '1001' },
    );
    t.equal(probe.code, 0, probe.stderr);
    t.match(probe.stdout, /^1001\n1001 644\nmonth,sales\n/, 'the sandbox user owns and reads the upload');
  });
}
