/**
 * The admin page Connectors (web/ui/src/admin/connectors.tsx) in a real Chromium against the real
 * admin API and a real MCP server (official SDK) that wants a bearer secret: add a connector (its
 * tools listed from the server), see its tools with their modes, set a tool's mode, list the tools
 * again (the mode kept), delete it; the secret never reaches the page; axe finds no serious or
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
  t.test('Connectors: add, tools and their modes, refresh, delete; the secret never on the page; axe clean', async (t) => {
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
    const mode = (tool: string) => page.$eval(`#connector-tools-acme select[data-tool="${tool}"]`, (s) => (s as HTMLSelectElement).value);
    t.equal(await mode('create_ticket'), 'ask', 'a tool that may change something starts at ask');
    t.equal(await mode('echo'), 'enabled', 'a read-only tool starts enabled');

    await page.selectOption('#connector-tools-acme select[data-tool="create_ticket"]', 'disabled');
    await page.waitForFunction(() => /create_ticket: disabled/.test(document.getElementById('conn-status')?.textContent ?? ''));
    t.equal((await getConnector(app.database.sql, 'acme'))?.tools.find((x) => x.name === 'create_ticket')?.mode, 'disabled', 'the mode is saved');
    t.same(await axeProblems(page), [], 'axe: the page with a connector');
    await settled(page);
    await screenshot(page, 'admin-connectors-1280');

    await page.click('button[aria-label="Refresh tools of Acme Tickets"]');
    await page.waitForFunction(() => /tool\(s\) listed/.test(document.getElementById('conn-status')?.textContent ?? ''));
    t.equal(await mode('create_ticket'), 'disabled', 'a refresh keeps the modes');
    t.notOk((await page.content()).includes(SECRET), 'the secret is never on the page');

    await page.click('button[aria-label="Delete Acme Tickets"]');
    await page.waitForFunction(() => /No connectors yet/.test(document.getElementById('connectors-table')?.textContent ?? ''));
    t.equal(await getConnector(app.database.sql, 'acme'), undefined, 'deleted');
  });
}
