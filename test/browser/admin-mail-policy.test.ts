/**
 * The server-wide send policy page (#/admin/mail-policy; web/ui/src/admin/mail-policy.tsx) in a
 * real Chromium against the real web app and its GET/PUT /api/admin/mail-policy: it shows the
 * policy, saves a change (read back from the API and the action log), says what is wrong as
 * sentences (found by the page, and as the server said it), and axe-core finds no serious or
 * critical issue at 1280 px light and 390 px dark.
 */
import t from 'tap';
import { queryActionLog } from '../../domain/action-log.js';
import { adminRig, openAdmin } from '../helpers/admin-browser.js';
import { axeProblems, browserUnavailable, checkNarrow, screenshot } from '../helpers/browser.js';

const why = browserUnavailable();
if (why) t.plan(0, why);
else {
  t.test('send policy: read, edit, save; problems as sentences; axe clean at 1280 light and 390 dark', async (t) => {
    const { app, page } = await adminRig(t);
    t.ok(await page.locator('#nav a[href="#/admin/mail-policy"]').count(), 'the page is in the admin navigation');
    await openAdmin(page, app.url, 'mail-policy', '#mail-policy-form');
    t.equal(await page.inputValue('#mp-other'), app.config.mail.other, 'the policy as the server has it');
    t.equal(await page.inputValue('#mp-max_per_hour'), String(app.config.mail.maxPerHour));

    // Found by the page before anything is sent.
    await page.fill('#mp-allow', 'corp.example\nCorp Example\nann@partner.example');
    await page.fill('#mp-block', 'corp.example');
    await page.fill('#mp-approval_timeout_s', '600');
    await page.click('#mail-policy-save');
    await page.waitForSelector('#mail-policy-problems');
    const problems = await page.$$eval('#mail-policy-problems li', (els) => els.map((e) => e.textContent ?? ''));
    t.same(
      problems,
      [
        'Always allowed domains: "Corp" is not a domain name; write it in lower case, like corp.example.',
        'Always allowed domains: "Example" is not a domain name; write it in lower case, like corp.example.',
        'Always allowed domains: "ann@partner.example" is an address; write only its domain (what comes after the @).',
        'corp.example is both allowed and blocked; a blocked domain always wins, so remove it from one list.',
        'Approval timeout (seconds) must be a whole number from 5 to 105.',
      ],
      'each problem as a sentence',
    );
    t.same(await axeProblems(page), [], 'axe: the page with its problems, 1280 px light');
    await screenshot(page, 'admin-mail-policy-problems');

    // A valid change is saved, read back and logged.
    await page.fill('#mp-allow', 'corp.example, eu.partner.example');
    await page.fill('#mp-block', 'competitor.example');
    await page.selectOption('#mp-other', 'block');
    await page.fill('#mp-max_recipients', '12');
    await page.fill('#mp-max_per_hour', '40');
    await page.fill('#mp-approval_timeout_s', '90');
    await page.click('#mail-policy-save');
    await page.waitForSelector('#mail-policy-status [role=status]');
    t.match(await page.textContent('#mail-policy-status'), /saved/);
    t.equal(await page.locator('#mail-policy-problems').count(), 0, 'no problem left');
    const c = app.client();
    await c.login('root', 'root-password-123');
    const api = await c.json('GET', '/api/admin/mail-policy');
    t.match(
      api.body,
      {
        allow_domains: ['corp.example', 'eu.partner.example'],
        block_domains: ['competitor.example'],
        other: 'block',
        max_recipients: 12,
        max_per_hour: 40,
        approval_timeout_s: 90,
      },
      'the API has the change',
    );
    const log = await queryActionLog(app.database.sql, { event: 'mail.policy_changed' });
    t.equal(log.length, 1, 'logged once');
    t.match(await page.textContent('#mail-policy-updated'), /Last changed/);
    await page.reload();
    await page.waitForSelector('#mail-policy-form');
    t.equal(await page.inputValue('#mp-allow'), 'corp.example\neu.partner.example', 'shown again after a reload');

    // The server's own refusal (a list the page cannot judge: over its length limit) as sentences too.
    await page.fill('#mp-allow', Array.from({ length: 501 }, (_, i) => `d${i}.example`).join('\n'));
    await page.click('#mail-policy-save');
    await page.waitForSelector('#mail-policy-problems');
    t.match(
      await page.textContent('#mail-policy-problems li'),
      /^Always allowed domains: .+\.$/,
      "the server's problem, with the field in words",
    );

    await page.fill('#mp-allow', 'corp.example');
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.setViewportSize({ width: 390, height: 900 });
    const bg = await page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue('--bg').trim());
    t.equal(bg, '#0d1117', 'dark colours');
    t.same(await axeProblems(page), [], 'axe: 390 px dark');
    await checkNarrow(t, page, 'admin-mail-policy-dark');
  });
}
