/**
 * Connectors in a real sandbox turn (docs/connectors.md): the MCP reference server
 * (`@modelcontextprotocol/server-everything`, Streamable HTTP) and an SDK-built server with a
 * static bearer secret, registered through the registry; a scripted model calls their tools
 * from inside a hardened container (agent → in-sandbox proxy → egress socket → the host's
 * gateway → the server); results stream to the chat; each call is audited; the secret the
 * server echoes is scrubbed, and root in the container finds it nowhere.
 */
import t from 'tap';
import * as openaiModel from '../../emulator/model-openai.js';
import { streamTurn } from '../helpers/chat.js';
import { dockerOrSkip, ensureTestImage, execIn } from './helpers.js';
import { chatRig, MODEL_KEY } from './chat-e2e-rig.js';
import { startServerEverything } from '../helpers/server-everything.js';
import { startMcpUpstream } from '../helpers/mcp-upstream.js';
import { ConnectorService } from '../../domain/connectors/index.js';
import { atRestEncryptor } from '../../core/index.js';
import { dbRows } from '../helpers/db.js';

const SECRET = 'e2e-connector-secret-0123456789-QWERTY';

const docker = await dockerOrSkip(t);
if (docker) {
  const image = await ensureTestImage(docker);
  const { start } = chatRig(docker, image);

  t.test('a sandbox turn calls connector tools through the gateway', async (t) => {
    const ev = await startServerEverything();
    t.teardown(() => ev.close());
    const acme = await startMcpUpstream({ requireHeader: { name: 'authorization', value: `Bearer ${SECRET}` } });
    t.teardown(() => acme.close());
    const model = await openaiModel.start({
      apiKey: MODEL_KEY,
      script: [
        { kind: 'reply', text: 'Calling. ', tool_calls: [{ name: 'everything__echo', arguments: { message: 'hello from the sandbox' } }] },
        { kind: 'reply', tool_calls: [{ name: 'acme__whoami', arguments: {} }] },
        { kind: 'reply', text: 'Both done.' },
      ],
    });
    t.teardown(() => model.close());
    const { d, c, logs } = await start(t, {
      AIRLOCK_MODEL_PROVIDER: 'openai',
      AIRLOCK_MODEL: 'gpt-e2e',
      AIRLOCK_MODEL_BASE_URL: model.url,
      AIRLOCK_MODEL_API_KEY: MODEL_KEY,
      AIRLOCK_CONNECTORS_ALLOW_HTTP_LOOPBACK: 'true',
    });
    const svc = new ConnectorService({ db: d.database.sql, enc: atRestEncryptor(d.config), allowHttpLoopback: true });
    const added = await svc.create({ id: 'everything', label: 'Everything', url: ev.url }, null);
    await svc.setToolModes('everything', { echo: 'enabled' });
    t.ok(added.connector.tools.length >= 5);
    await svc.create({ id: 'acme', label: 'Acme', url: acme.url, auth_kind: 'bearer', auth_secret: SECRET }, null);

    const turn = await streamTurn(c, { message: 'use the connectors' });
    t.equal(turn.status, 200);
    const ends = turn.events.filter((e) => e.type === 'tool_end');
    t.same(
      ends.map((e) => [e.tool, e.ok]),
      [
        ['everything__echo', true],
        ['acme__whoami', true],
      ],
      JSON.stringify(ends).slice(0, 600),
    );
    t.match(JSON.stringify(ends[0].output), /hello from the sandbox/, 'the reference server answered through the gateway');
    t.notMatch(JSON.stringify(turn.events), SECRET, 'the echoed secret never reaches the chat');
    t.match(JSON.stringify(ends[1].output), /redacted/);
    t.equal(turn.events.at(-1).stop_reason, 'end_turn');
    t.ok(
      acme.requests.some((r) => r.auth === `Bearer ${SECRET}`),
      'the secret was injected on the host',
    );

    // Audited: the proxy's rows for the connector routes, and the gateway's call records.
    const sessionId = turn.events.at(-1).session_id;
    const rows = await dbRows(d.database.sql, 'SELECT route, outcome FROM proxy_requests WHERE session_id = ?', sessionId);
    t.ok(
      rows.some((r) => r.route === 'connector:everything' && r.outcome === 'forwarded'),
      'proxy_requests has the connector calls',
    );
    t.match(logs.text(), /"connector":"everything","tool":"echo","status":"ok"/);

    // Root in the sandbox finds the connector secret nowhere (profile, run folder, every process's env and argv).
    const [sb] = d.runtime!.sessions.list().filter((s) => s.sessionId === sessionId);
    // The secret goes in through the exec's env; the scanning shell skips itself (its env holds it) and
    // each grep reads other processes' files only (its own argv holds the pattern).
    const script = 'grep -rlsF -e "$S" /run/airlock /workspace; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do p=${f#/proc/}; p=${p%%/*}; [ "$p" = "$$" ] && continue; grep -qsF -e "$S" "$f" && echo "$f"; done; echo scanned';
    const scan = await execIn(docker, sb.containerId!, ['sh', '-c', script], { user: 'root', env: [`S=${SECRET}`] });
    t.equal(scan.stdout.trim(), 'scanned', 'no file holds the secret');
    t.notMatch(logs.text(), SECRET, 'no log line holds the secret');
  });
}
