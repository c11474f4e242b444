/**
 * Agent policies on the admin page, in a real Chromium against the real web app (issue 33): a
 * policy is edited in place (Edit loads it into the form; tools and models are checkbox groups
 * from the catalogue; the mail rules are fields) and saved with one PATCH (stored, logged); the
 * table shows the mail rules as sentences; the effective policy of a user names the policies it
 * comes from as links and shows the mail rules in force, and the link opens the organisation with
 * that policy marked. 1280 px light and 390 px dark, axe-core clean, no sideways scrolling.
 */
import t from 'tap';
import type { Page } from 'playwright-core';
import { adminRig, openAdmin, ROOT_PW } from '../helpers/admin-browser.js';
import { axeProblems, browserUnavailable, checkNarrow, screenshot } from '../helpers/browser.js';

const text = async (page: Page, sel: string) => ((await page.textContent(sel)) ?? '').replace(/\s+/g, ' ').trim();

const why = browserUnavailable();
if (why) t.plan(0, why);
else {
  for (const [width, scheme] of [
    [1280, 'light'],
    [390, 'dark'],
  ] as const) {
    t.test(
      `edit an agent policy with checkboxes; the effective policy by name with its mail rules (${width} px, ${scheme})`,
      async (t) => {
        const { app, page, bob } = await adminRig(t, width);
        await page.emulateMedia({ colorScheme: scheme });
        const api = app.client();
        t.equal((await api.login('root', ROOT_PW)).status, 200);
        const org = (await api.json('POST', '/api/identity/organisations', { name: 'Acme' })).body.id as number;
        await api.json('PUT', `/api/identity/organisations/${org}/members/${bob}`, { role: 'member' });
        const pid = (
          await api.json('POST', `/api/identity/organisations/${org}/agent-policies`, {
            name: 'sheets only',
            applies_to: 'all',
            allowed_tools: ['fetch_sheet'],
          })
        ).body.id as number;

        await openAdmin(page, app.url, 'organisations', '#agent-policies-table');
        t.match(
          await text(page, '#agent-policies-table'),
          /Other recipients: the server's default/,
          'the mail rules as sentences',
        );
        const onScreen = await page.$$eval('#agent-policies-table button', (els) =>
          els
            .map((b) => b.getBoundingClientRect())
            .every((r) => r.width > 0 && r.left >= 0 && r.right <= window.innerWidth + 1),
        );
        t.ok(onScreen, 'Edit and Delete on screen without scrolling sideways');
        await page.click('button[aria-label="Edit policy sheets only"]');
        await page.waitForSelector('#ap-save');
        t.equal(await text(page, '#ap-form-title'), 'Edit agent policy sheets only');
        t.equal(await page.inputValue('#ap-name'), 'sheets only', 'the policy is in the form');
        t.notOk(await page.isChecked('#ap-any-tool'), 'restricted tools: "any" unticked');
        t.ok(await page.isChecked('#ap-tools input[value="fetch_sheet"]'), 'its allowed tool ticked');
        t.notOk(await page.isChecked('#ap-tools input[value="send_email"]'));
        t.ok(await page.isChecked('#ap-any-model'), 'models unrestricted');
        t.ok(await page.isDisabled('#ap-models input[value="demo"]'), 'no single model while "any" is ticked');
        t.same(await axeProblems(page), [], `axe: editing a policy (${width} px, ${scheme})`);

        await page.fill('#ap-name', 'sheets and mail');
        await page.check('#ap-tools input[value="send_email"]');
        await page.check('#ap-denied-models input[value="demo"]');
        await page.fill('#ap-mail-block', 'rival.example');
        await page.selectOption('#ap-mail-other', 'ask');
        await page.fill('#ap-mail-max-recipients', '5');
        await page.click('#ap-save');
        await page.waitForFunction(() =>
          /Policy sheets and mail saved/.test(document.querySelector('#policy-status')?.textContent ?? ''),
        );
        t.equal(await text(page, '#ap-form-title'), 'New agent policy', 'back to a new policy');
        const stored = (await api.json('GET', `/api/identity/organisations/${org}/agent-policies`)).body.policies;
        t.match(stored, [
          {
            id: pid,
            name: 'sheets and mail',
            allowed_tools: ['fetch_sheet', 'send_email'],
            allowed_models: null,
            denied_models: ['demo'],
            mail_block_domains: ['rival.example'],
            mail_other: 'ask',
            mail_max_recipients: 5,
            mail_max_per_hour: null,
          },
        ]);
        t.equal(stored.length, 1, 'edited, not added');
        const log = await app.database.sql
          .selectFrom('action_log')
          .select('data')
          .where('event', '=', 'identity.agent_policy.updated')
          .execute();
        t.equal(log.length, 1, 'one identity.agent_policy.updated entry');
        const row = await text(page, '#agent-policies-table tbody tr');
        t.match(row, /fetch_sheet, send_email/);
        t.match(row, /Blocked: rival\.example/);
        t.match(row, /Other recipients: the user is asked in the chat first/);
        t.match(row, /Most recipients per message: 5/);
        t.same(await axeProblems(page), [], `axe: the edited policy in the table (${width} px, ${scheme})`);
        if (width === 390) await checkNarrow(t, page, 'admin-policies-dark');
        else await screenshot(page, 'admin-policies');

        // The effective policy of bob: the policy by name (a link), the mail rules in force.
        await page.fill('#eap-user', 'bob');
        await page.click('#eap-show');
        await page.waitForSelector('#eap-from a');
        t.match(await text(page, '#eap-from'), /From the policy sheets and mail \(Acme\)/);
        t.notMatch(await text(page, '#eap-out'), /From policies \d/, 'no bare ids');
        t.equal(await page.getAttribute('#eap-from a', 'href'), `#/admin/organisations/${org}/policy/${pid}`);
        const mail = await text(page, '#eap-mail');
        t.match(mail, /Blocked: rival\.example/);
        t.match(mail, /Other recipients: the user is asked in the chat first/);
        t.match(mail, /Most recipients per message: 5/);
        t.match(mail, /Most messages per hour: \d+/, "the server's limit as a number");
        t.same(await axeProblems(page), [], `axe: the effective policy (${width} px, ${scheme})`);
        await screenshot(page, `admin-effective-policy-${width}-${scheme}`);

        await page.click('#eap-from a');
        await page.waitForSelector(`#policy-${pid}[aria-current="true"]`);
        t.ok(await page.isVisible(`#policy-${pid}`), 'the linked policy is shown, marked');
        if (width === 390) await checkNarrow(t, page, 'admin-policy-linked-dark');
      },
    );
  }
}
