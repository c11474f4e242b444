/**
 * Connect from the chat (docs/connectors.md, "OAuth per user") in a real Chromium: a turn calls a
 * tool of an OAuth connector the user has not connected, through the agent's own connector client
 * → the in-sandbox proxy → the egress gateway → the daemon's token service (no grant: the gateway
 * answers ERR_CONNECTOR_NOT_CONNECTED). The failed tool row offers "Connect Acme Tickets"; it goes
 * through the tracker's authorization server (its login and consent forms) and comes back to the
 * same chat, the button gone; the grant is kept for the user; the next turn's call reaches the
 * tracker with the user's own token, and the page never holds it.
 */
import t from 'tap';
import { browserUnavailable, launch, screenshot, settled } from '../helpers/browser.js';
import { dbRows } from '../helpers/db.js';
import { PASSWORD, signedIn, signInAndAllow, startOAuthRig } from '../helpers/connector-oauth.js';
import { startConnectorRig } from '../helpers/connector-rig.js';
import { atRestEncryptor, createLogger } from '../../core/index.js';
import type { TurnRequest, TurnRunner } from '../../core/sandbox-protocol.js';
import { ToolHost } from '../../agent/mcp.js';
import { connectorTokenService } from '../../daemon/host/connector-tokens.js';

const TOOL = 'tickets__list_tickets';

const why = browserUnavailable();
if (why) t.plan(0, why);
else {
  t.test(
    'a tool that needs a connection: Connect in the chat, back to the same chat, the next call works',
    async (t) => {
      let current: TurnRequest | undefined;
      const agent: { host?: ToolHost } = {};
      const runner: TurnRunner = {
        async runTurn(req) {
          current = req;
          try {
            req.onEvent({ type: 'tool_start', call_id: 'call-1', tool: TOOL, input: {} });
            const r = await agent.host!.call(TOOL, {}, req.signal, 30_000, 'call-1');
            req.onEvent({
              type: 'tool_end',
              call_id: 'call-1',
              tool: TOOL,
              ok: r.ok,
              ...(r.ok ? { output: r.text } : { error: r.text }),
              duration_ms: 1,
            });
            req.onEvent({ type: 'text_delta', text: r.ok ? 'Here are your tickets.' : 'I need a connection first.' });
            return { stop_reason: 'end_turn' };
          } finally {
            current = undefined;
          }
        },
      };
      const rig = await startOAuthRig(t, { services: { chat: { runner } } });
      // The tracker's tools as an admin's refresh would have listed them.
      await rig.app.database.sql
        .updateTable('connectors')
        .set({
          tools: JSON.stringify([
            {
              name: 'list_tickets',
              description: 'List the tickets',
              input_schema: { type: 'object', properties: {} },
              mode: 'enabled',
            },
          ]),
        })
        .where('id', '=', 'tickets')
        .execute();
      const alice = await signedIn(rig, 'alice');
      const app = rig.app;
      const tokens = connectorTokenService(
        { config: app.config, database: app.database, log: app.log },
        atRestEncryptor(app.config),
        rig.lookup,
      );
      const conn = await startConnectorRig(t, app, alice.userId, { tokens, turn: () => current });
      const host = await ToolHost.connect([], {}, createLogger({ level: 'silent', destination: process.stderr }));
      host.setRemote(conn.agent);
      t.teardown(() => host.close());
      await host.refresh();
      agent.host = host;
      const grants = async () => (await dbRows(app.database.sql, 'SELECT user_id FROM connector_tokens')).length;

      const browser = await launch(t);
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      await page.goto(app.url + '/#/login');
      await page.fill('#username', 'alice');
      await page.fill('#password', PASSWORD);
      await page.keyboard.press('Enter');
      await page.waitForSelector('#prompt');
      await page.focus('#prompt');
      await page.keyboard.insertText('What tickets do I have?');
      await page.keyboard.press('Enter');

      const button = '.connect-connector[data-connector="tickets"] button';
      await page.waitForSelector(button);
      await page.waitForSelector('.msg.assistant[data-done]');
      t.equal(
        (await page.textContent(button))?.trim(),
        'Connect Acme Tickets',
        'the failed tool row offers the connection by the connector’s label',
      );
      t.match(
        conn.calls.at(-1),
        { status: 'refused', code: 'ERR_CONNECTOR_NOT_CONNECTED' },
        'the gateway refused: no grant',
      );
      const chatUrl = page.url();
      t.match(chatUrl, /#\/chat\/[\w-]+/, 'in a chat of its own');
      await page.$eval('.connect-connector', (e) => e.scrollIntoView({ block: 'center' }));
      await settled(page);
      await screenshot(page, 'chat-connect-1280', { fullPage: false });

      await page.click(button);
      t.equal(await signInAndAllow(page, 'alice'), rig.tickets.auth.url, 'at the authorization server');
      await page.waitForURL((u) => u.origin === new URL(app.url).origin && u.hash === new URL(chatUrl).hash);
      t.match(page.url(), /[?&]connected=tickets/, 'back in the same chat, told what was connected');
      await page.waitForSelector('.msg.assistant[data-done]');
      t.match(await page.textContent('.msg.user'), /What tickets do I have\?/, 'the chat as it was');
      await page.waitForFunction((sel) => !document.querySelector(sel), button);
      t.pass('the Connect button is gone once connected');
      t.equal(await grants(), 1, 'the grant is kept for the user');

      // The next turn: the same tool now reaches the tracker with the user's own token.
      await page.focus('#prompt');
      await page.keyboard.insertText('And now?');
      await page.keyboard.press('Enter');
      await page.waitForFunction(() => document.querySelectorAll('.msg.assistant[data-done]').length === 2);
      t.match(await page.textContent('.msg.assistant:last-of-type'), /Here are your tickets\./);
      t.match(conn.calls.at(-1), { status: 'ok' }, 'the gateway forwarded the call');
      const token = await tokens.accessToken('tickets', alice.userId);
      t.ok(token && token.length > 10, 'the user has a token on the host');
      t.notOk((await page.content()).includes(token!), 'the page never holds the token');
      t.notOk(conn.logs.text().includes(token!), 'nor does the gateway log');
    },
  );
}
