/**
 * The admin page Connectors (web/ui/src/admin/connectors.tsx) in a real Chromium against the real
 * admin API and a real MCP server (official SDK) that wants a bearer secret: add a connector (its
 * tools listed from the server), see its tools with their modes, set a tool's mode, list the tools
 * again (the mode kept), edit it (label, disabled and enabled again; the stored secret kept by an
 * empty field, Cancel saving nothing), delete it; the secret never reaches the page; axe finds no serious or
 * critical issue. The screenshot is test-artifacts/screenshots/admin-connectors-1280.png.
 */
import t from 'tap';
import { addUser, startTestApp } from '../helpers/app.js';
import { axeProblems, browserUnavailable, launch, screenshot, settled } from '../helpers/browser.js';
import { loginAsRoot, ROOT_PW } from '../helpers/admin-browser.js';
import { startMcpUpstream } from '../helpers/mcp-upstream.js';
import { getConnector } from '../../domain/connectors/index.js';

const SECRET = 'admin-page-secret-0123456789abcdef';

const why = browserUnavailable();
if (why) t.plan(0, why);
else {
  t.test(
    'Connectors: add, tools and their modes, refresh, edit, delete; the secret never on the page; axe clean',
    async (t) => {
      const app = await startTestApp(t, { env: { AIRLOCK_CONNECTORS_ALLOW_HTTP_LOOPBACK: 'true' } });
      await addUser(app.database, 'root', ROOT_PW, { superuser: true, email: 'root@local.test' });
      const up = await startMcpUpstream({ requireHeader: { name: 'authorization', value: `Bearer ${SECRET}` } });
      t.teardown(() => up.close());
      const browser = await launch(t);
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      page.on('dialog', (d) => void d.accept());
      await loginAsRoot(page, app.url);
      t.ok(await page.locator('#nav a[href="#/admin/connectors"]').count(), 'linked in the admin navigation');
      await page.goto(app.url + '/#/admin/connectors');
      await page.waitForSelector('#connector-form');
      t.match(await page.textContent('#connectors-table'), /No connectors yet/);

      await page.fill('#conn-id', 'acme');
      await page.fill('#conn-label', 'Acme Tickets');
      await page.fill('#conn-url', up.url);
      await page.selectOption('#conn-auth', 'bearer');
      await page.fill('#conn-secret', SECRET);
      await page.click('#conn-save');
      await page.waitForSelector('#connectors-table td:has-text("Acme Tickets")');
      t.match(await page.textContent('#conn-form-status'), /Acme Tickets added with \d+ tool/);
      t.match(await page.textContent('#connectors-table'), /secret set/);
      const mode = (tool: string) =>
        page.$eval(`#connector-tools-acme select[data-tool="${tool}"]`, (s) => (s as HTMLSelectElement).value);
      t.equal(await mode('create_ticket'), 'ask', 'a tool that may change something starts at ask');
      t.equal(await mode('echo'), 'enabled', 'a read-only tool starts enabled');

      await page.selectOption('#connector-tools-acme select[data-tool="create_ticket"]', 'disabled');
      await page.waitForFunction(() =>
        /create_ticket: disabled/.test(document.getElementById('conn-status')?.textContent ?? ''),
      );
      t.equal(
        (await getConnector(app.database.sql, 'acme'))?.tools.find((x) => x.name === 'create_ticket')?.mode,
        'disabled',
        'the mode is saved',
      );
      t.same(await axeProblems(page), [], 'axe: the page with a connector');
      await settled(page);
      await screenshot(page, 'admin-connectors-1280');

      await page.click('button[aria-label="Refresh tools of Acme Tickets"]');
      await page.waitForFunction(() =>
        /tool\(s\) listed/.test(document.getElementById('conn-status')?.textContent ?? ''),
      );
      t.equal(await mode('create_ticket'), 'disabled', 'a refresh keeps the modes');
      t.notOk((await page.content()).includes(SECRET), 'the secret is never on the page');

      // Edit: the same form, filled; the id fixed; an empty secret keeps the stored one.
      await page.click('button[aria-label="Edit Acme Tickets"]');
      await page.waitForFunction(
        () => document.getElementById('conn-form-heading')?.textContent === 'Edit Acme Tickets',
      );
      t.equal(await page.inputValue('#conn-label'), 'Acme Tickets', 'the form holds the connector');
      t.equal(await page.inputValue('#conn-url'), up.url);
      t.equal(await page.inputValue('#conn-auth'), 'bearer');
      t.ok(await page.isDisabled('#conn-id'), 'the id cannot change (it names the tools)');
      t.equal(await page.inputValue('#conn-secret'), '', 'the secret is never sent back');
      t.match(await page.textContent('#conn-secret-hint'), /leave empty to keep/);
      await page.waitForFunction(() => document.activeElement?.id === 'conn-label');
      t.same(await axeProblems(page), [], 'axe: the edit form');
      await page.fill('#conn-label', 'Acme Helpdesk');
      await page.uncheck('#conn-enabled');
      await page.click('#conn-save');
      await page.waitForFunction(() =>
        /Acme Helpdesk saved \(disabled/.test(document.getElementById('conn-form-status')?.textContent ?? ''),
      );
      t.equal(await page.textContent('#conn-form-heading'), 'Add a connector', 'the form is back to adding');
      t.match(
        await getConnector(app.database.sql, 'acme'),
        { label: 'Acme Helpdesk', enabled: false, has_secret: true, auth_kind: 'bearer' },
        'saved; the secret kept',
      );
      t.match(await page.textContent('#connectors-table'), /Acme Helpdesk.*disabled/s, 'the list shows it disabled');
      await page.click('button[aria-label="Edit Acme Helpdesk"]');
      await page.waitForFunction(
        () => document.getElementById('conn-form-heading')?.textContent === 'Edit Acme Helpdesk',
      );
      await page.check('#conn-enabled');
      await page.click('#conn-save');
      await page.waitForFunction(() =>
        /Acme Helpdesk saved\.$/.test(document.getElementById('conn-form-status')?.textContent ?? ''),
      );
      // The kept secret still opens the server: listing its tools again needs it.
      await page.click('button[aria-label="Refresh tools of Acme Helpdesk"]');
      await page.waitForFunction(() =>
        /tool\(s\) listed/.test(document.getElementById('conn-status')?.textContent ?? ''),
      );
      t.notOk((await page.content()).includes(SECRET), 'the secret is never on the page, also after editing');
      // Cancel leaves it as it was.
      await page.click('button[aria-label="Edit Acme Helpdesk"]');
      await page.fill('#conn-label', 'Not saved');
      await page.click('#connector-form button:text-is("Cancel")');
      t.equal(await page.textContent('#conn-form-heading'), 'Add a connector');
      t.equal((await getConnector(app.database.sql, 'acme'))?.label, 'Acme Helpdesk', 'Cancel saves nothing');

      await page.click('button[aria-label="Delete Acme Helpdesk"]');
      await page.waitForFunction(() =>
        /No connectors yet/.test(document.getElementById('connectors-table')?.textContent ?? ''),
      );
      t.equal(await getConnector(app.database.sql, 'acme'), undefined, 'deleted');
    },
  );
}
