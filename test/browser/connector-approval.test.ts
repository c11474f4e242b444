/**
 * The connector approval card (web/ui/src/connector-approval-card.tsx) in a real Chromium against
 * the real chat page and approval route, the daemon's ConnectorApprovals, and the agent's own
 * connector client → in-sandbox proxy → egress gateway → a real MCP server (official SDK): a turn
 * calls a tool marked ask; the card shows the connector's label, the tool and the exact arguments
 * as pretty-printed JSON, markup in them shown as text (no element made from it); axe-core finds
 * no serious or critical issue; Approve runs the call with exactly those arguments; after a reload
 * the card is still there, decided, from the store.
 */
import t from 'tap';
import { startTestApp } from '../helpers/app.js';
import { axeProblems, browserUnavailable, launch, screenshot, settled } from '../helpers/browser.js';
import { loginAs } from '../helpers/mail-rig.js';
import { startMcpUpstream } from '../helpers/mcp-upstream.js';
import { startConnectorRig } from '../helpers/connector-rig.js';
import { ConnectorService } from '../../domain/connectors/index.js';
import { atRestEncryptor, createLogger } from '../../core/index.js';
import type { TurnRequest, TurnRunner } from '../../core/sandbox-protocol.js';
import { ToolHost } from '../../agent/mcp.js';
import { approvalDecider, ConnectorApprovals } from '../../daemon/host/connector-approvals.js';
import { MailGate } from '../../domain/mail/index.js';

const ARGS = {
  title: 'Printer on fire <img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>',
  priority: 'high',
};

const why = browserUnavailable();
if (why) t.plan(0, why);
else {
  t.test(
    'the connector approval card: label, tool, exact arguments as text; axe clean; Approve runs exactly them',
    async (t) => {
      let current: TurnRequest | undefined;
      // The agent's tool host, made once the connector exists (the turn runs later).
      const agent: { host?: ToolHost } = {};
      const runner: TurnRunner = {
        async runTurn(req) {
          current = req;
          try {
            req.onEvent({ type: 'tool_start', call_id: 'call-1', tool: 'acme__create_ticket', input: ARGS });
            const r = await agent.host!.call('acme__create_ticket', ARGS, req.signal, 30_000, 'call-1');
            req.onEvent({
              type: 'tool_end',
              call_id: 'call-1',
              tool: 'acme__create_ticket',
              ok: r.ok,
              ...(r.ok ? { output: r.text } : { error: r.text }),
              duration_ms: 1,
            });
            return { stop_reason: 'end_turn' };
          } finally {
            current = undefined;
          }
        },
      };
      let approvals!: ConnectorApprovals;
      const app = await startTestApp(t, {
        env: { AIRLOCK_CONNECTORS_ALLOW_HTTP_LOOPBACK: 'true' },
        services: (a) => {
          approvals = new ConnectorApprovals({ db: a.database.sql, log: a.log, timeoutMs: 60_000 });
          return {
            chat: { runner },
            approvals: approvalDecider(new MailGate(a.database.sql, a.config, a.log), approvals),
          };
        },
      });
      await loginAs(app, 'bob', true);
      const bobId = (
        await app.database.sql.selectFrom('users').select('id').where('username', '=', 'bob').executeTakeFirstOrThrow()
      ).id;
      const up = await startMcpUpstream();
      t.teardown(() => up.close());
      await new ConnectorService({
        db: app.database.sql,
        enc: atRestEncryptor(app.config),
        allowHttpLoopback: true,
      }).create({ id: 'acme', label: 'Acme Tickets', url: up.url, auth_kind: 'none' }, null);
      const rig = await startConnectorRig(t, app, bobId, { approve: approvals.approve, turn: () => current });
      const host = await ToolHost.connect([], {}, createLogger({ level: 'silent', destination: process.stderr }));
      host.setRemote(rig.agent);
      t.teardown(() => host.close());
      await host.refresh();
      agent.host = host;

      const browser = await launch(t);
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, colorScheme: 'light' });
      await page.goto(app.url + '/#/login');
      await page.fill('#username', 'bob');
      await page.fill('#password', 'bob-password');
      await page.keyboard.press('Enter');
      await page.waitForSelector('#prompt');
      await page.focus('#prompt');
      await page.keyboard.insertText('File a ticket');
      await page.keyboard.press('Enter');

      await page.waitForSelector('.connector-approval[data-state=pending]');
      t.equal(
        (await page.textContent('.connector-approval dd.connector'))?.trim(),
        'Acme Tickets',
        'the connector by its label',
      );
      t.equal((await page.textContent('.connector-approval dd.tool'))?.trim(), 'create_ticket', 'the tool');
      t.equal(
        await page.textContent('.connector-approval .approval-args'),
        JSON.stringify(ARGS, null, 2),
        'the exact arguments, pretty-printed',
      );
      t.equal(
        await page.locator('.connector-approval img, .connector-approval script').count(),
        0,
        'markup in the arguments is text, never elements',
      );
      t.equal(
        await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned ?? 0),
        0,
        'nothing in the arguments ran',
      );
      t.same(await axeProblems(page), [], 'axe: the pending card');
      t.same(up.calls, [], 'nothing forwarded before the decision');
      await page.$eval('.connector-approval', (e) => e.scrollIntoView({ block: 'center' }));
      await settled(page);
      await screenshot(page, 'chat-connector-approval-1280', { fullPage: false });

      await page.click('.connector-approval .approval-actions button:text-is("Approve")');
      await page.waitForSelector('.connector-approval[data-state=approved]');
      await page.waitForSelector('.msg.assistant[data-done]');
      t.match((await page.textContent('.connector-approval .approval-state'))?.trim(), /^Approved/);
      t.same(up.calls, [{ name: 'create_ticket', args: ARGS }], 'the server got exactly the arguments shown');

      // After a reload the card is still there, from the store: decided, with the same arguments.
      await page.reload();
      await page.waitForSelector('.connector-approval[data-state=approved]');
      t.equal(
        (await page.textContent('.connector-approval dd.connector'))?.trim(),
        'Acme Tickets',
        'after a reload: the connector',
      );
      t.equal(
        await page.textContent('.connector-approval .approval-args'),
        JSON.stringify(ARGS, null, 2),
        'after a reload: the exact arguments',
      );
      t.match(
        (await page.textContent('.connector-approval .approval-state'))?.trim(),
        /^Approved/,
        'after a reload: the decision',
      );
      t.equal(
        await page.locator('.connector-approval .approval-actions button').count(),
        0,
        'a decided card has no buttons',
      );
      t.equal(
        await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned ?? 0),
        0,
        'nothing in the stored arguments ran',
      );
    },
  );
}
