/**
 * The directory sync's result on the SSO & sync page (issue 33), with the Directory emulator and
 * the real sync runner: the first sync lists only what changed (no rows of zeros); a second one
 * with nothing new says so in one line; the status area's "Sync job N started." is replaced by
 * the job's outcome once it ends, also for a failed job. 1280 px light and 390 px dark, axe clean.
 */
import t from 'tap';
import type { Page } from 'playwright-core';
import { start as startDirectory } from '../../emulator/directory.js';
import type { SandboxControl } from '../../web/index.js';
import { syncPorts } from '../helpers/directory.js';
import { addUser, startTestApp } from '../helpers/app.js';
import { loginAsRoot, openAdmin, ROOT_PW } from '../helpers/admin-browser.js';
import { axeProblems, browserUnavailable, checkNarrow, launch, screenshot } from '../helpers/browser.js';

const text = async (page: Page, sel: string) => ((await page.textContent(sel)) ?? '').replace(/\s+/g, ' ').trim();

/** Start a sync from the page and wait until the status area shows its outcome. */
async function runSync(page: Page): Promise<string> {
  await page.click('#sync-start');
  await page.waitForFunction(
    () => /Sync job \d+ (succeeded|failed)/.test(document.querySelector('#sync-status')?.textContent ?? ''),
    undefined,
    { timeout: 20_000 },
  );
  return text(page, '#sync-status');
}

const why = browserUnavailable();
if (why) t.plan(0, why);
else {
  for (const [width, scheme] of [
    [1280, 'light'],
    [390, 'dark'],
  ] as const) {
    t.test(
      `sync result: only what changed, "nothing changed" in one line, the outcome replaces "started" (${width} px, ${scheme})`,
      async (t) => {
        const dir = await startDirectory();
        t.teardown(() => dir.close());
        dir.seed({ users: 4, groups: 2, memberships: 5 });
        dir.latencyMs = 50;
        const sandboxes: SandboxControl = { killForUser: () => {}, policyChanged: () => {} };
        const ports = syncPorts(sandboxes, { maxAttempts: 2 });
        const app = await startTestApp(t, {
          services: ports.services,
          env: { AIRLOCK_GOOGLE_DIRECTORY_BASE_URL: dir.url, AIRLOCK_GOOGLE_TOKEN_URL: dir.tokenUrl },
        });
        const runner = ports.runner();
        t.teardown(() => runner.idle());
        await addUser(app.database, 'root', ROOT_PW, { superuser: true, email: 'root@local.test' });
        const api = app.client();
        t.equal((await api.login('root', ROOT_PW)).status, 200);
        const conn = await api.json('POST', '/api/identity/connections', {
          provider: 'google',
          issuer: 'https://accounts.google.com',
          client_id: 'sync-ui-client',
          client_secret: 'sync-ui-secret-000',
          service_account_json: JSON.stringify(dir.serviceAccount),
          delegated_admin_email: `admin@${dir.domain}`,
        });
        t.equal(conn.status, 201, 'connection');

        const browser = await launch(t);
        const page = await browser.newPage({ viewport: { width, height: 900 }, colorScheme: scheme });
        await loginAsRoot(page, app.url);
        await openAdmin(page, app.url, 'identity', '#sync-start');

        // First sync: the changes, and nothing that stayed at zero.
        const first = await runSync(page);
        t.match(
          first,
          /^Sync job \d+ succeeded: .*4 users created.*2 groups created/,
          'the outcome, with what changed',
        );
        t.notMatch(first, /started/, '"started" is gone');
        const rows = await page.$$eval('#sync-result tbody tr', (trs) =>
          trs.map((r) => Array.from(r.children, (c) => (c.textContent ?? '').trim())),
        );
        t.ok(rows.length > 0 && rows.length < 10, `a short table (${rows.length} rows)`);
        t.ok(
          rows.every(([, n]) => Number(n) !== 0),
          'no row of zeros',
        );
        t.match(rows, [['users created', '4']]);
        t.match(await text(page, '#sync-stats'), /read .*4 users.*requests.*ms/, 'how it went, in one line');
        t.same(await axeProblems(page), [], `axe: the first result (${width} px, ${scheme})`);
        await screenshot(page, `admin-sync-changes-${width}-${scheme}`);

        // Again with nothing new in the directory: one line.
        const second = await runSync(page);
        t.match(second, /^Sync job \d+ succeeded: nothing changed\.$/);
        t.equal(await page.locator('#sync-result tr').count(), 0, 'no table');
        t.equal(await text(page, '#sync-result'), 'Nothing changed: Airlock already matched the directory.');
        t.same(await axeProblems(page), [], `axe: nothing changed (${width} px, ${scheme})`);
        if (width === 390) await checkNarrow(t, page, 'admin-sync-nothing-dark');
        else await screenshot(page, 'admin-sync-nothing');

        // A failing sync: the outcome says so (the error itself is shown below it).
        dir.fail({ pathIncludes: '/users', status: 403, reason: 'forbidden' });
        const third = await runSync(page);
        t.match(third, /^Sync job \d+ failed/);
        t.match(await text(page, '#sync-error'), /upstream HTTP 403/);
      },
    );
  }
}
