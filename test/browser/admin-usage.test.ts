/**
 * The Usage page (#/admin/usage; web/ui/src/admin/usage.tsx) in a real Chromium against the real
 * web app: the report shows what the usage rollup holds (written by the turn's-end function
 * itself), the CSV link follows the filter, a budget is set for a user, set again (its amount
 * changes, read back from the API) and removed, and one for a team chosen by name; axe-core finds no
 * serious or critical issue.
 */
import t from 'tap';
import { recordSandboxTime, recordTurnUsage } from '../../domain/usage/index.js';
import { adminRig, openAdmin, ROOT_PW } from '../helpers/admin-browser.js';
import { axeProblems, browserUnavailable } from '../helpers/browser.js';

const why = browserUnavailable();
if (why) t.plan(0, why);
else {
  t.test('usage page: report, CSV link, set, change and remove a budget; axe clean', async (t) => {
    const { app, page, bob } = await adminRig(t);
    const db = app.database.sql;
    await db
      .updateTable('chat_models')
      .set({ price_input_per_mtok: 2, price_output_per_mtok: 8, price_currency: 'EUR' })
      .execute();
    const at = new Date();
    // The default model entry exists once the app has resolved it; the turn's-end function writes the rows.
    await db
      .insertInto('chat_models')
      .values({
        id: 'default',
        label: 'Default',
        provider: 'demo',
        model: 'demo',
        base_url: null,
        api_key_enc: null,
        context_tokens: 100000,
        price_input_per_mtok: 2,
        price_output_per_mtok: 8,
        price_currency: 'EUR',
      })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    await recordTurnUsage(db, {
      userId: bob,
      modelId: 'default',
      usage: { input_tokens: 1200, output_tokens: 300 },
      toolCalls: 2,
      mails: 1,
      at,
    });
    await recordTurnUsage(db, {
      userId: bob,
      modelId: 'default',
      usage: { input_tokens: 800, output_tokens: 200 },
      toolCalls: 0,
      mails: 0,
      at,
    });
    await recordSandboxTime(db, { userId: bob, modelId: 'default', seconds: 150, at });

    t.ok(await page.locator('#nav a[href="#/admin/usage"]').count(), 'the page is in the admin navigation');
    await openAdmin(page, app.url, 'usage', '#usage-table');
    const cells = await page.$$eval('#usage-table tbody tr td', (els) => els.map((e) => e.textContent ?? ''));
    t.same(
      cells,
      [at.toISOString().slice(0, 10), 'bob', '2', '2,000', '500', '2', '1', '2.5', '0.008000'],
      "bob's day: turns, tokens, tools, mails, sandbox-minutes, cost",
    );
    t.match(await page.textContent('#usage-table thead'), /Cost \(EUR\)/);

    await page.selectOption('#usage-period', 'month');
    await page.selectOption('#usage-group', 'model');
    await page.click('#usage-show');
    await page.waitForFunction(() => document.querySelector('#usage-table tbody td')?.textContent?.length === 7);
    t.match(
      await page.getAttribute('#usage-csv', 'href'),
      /^\/api\/admin\/usage\.csv\?.*group=model&period=month/,
      'the CSV link follows the filter',
    );
    const csv = await page.evaluate(
      async (href) => (await fetch(href!)).text(),
      await page.getAttribute('#usage-csv', 'href'),
    );
    t.match(
      csv,
      /^period,group,key,name,turns,input_tokens,output_tokens,tool_calls,mails,sandbox_minutes,cost,currency\r\n\d{4}-\d{2},model,default,[^,]*,2,2000,500,2,1,2\.5,0\.008,EUR\r\n$/,
    );

    // A budget for bob, then the same again with another amount: changed, not refused.
    await page.fill('#budget-user', 'bob');
    await page.fill('#budget-amount', '3000');
    await page.click('#budget-save');
    await page.waitForSelector('#budget-form-status [role=status]');
    await page.waitForSelector('#budgets-table tbody tr td:has-text("bob")');
    t.match(await page.textContent('#budgets-table tbody'), /3,000.*2,500 \(83 %\)/, 'used in the running period');
    t.same(await axeProblems(page), [], 'axe: the page with a budget');
    await page.fill('#budget-amount', '10000');
    await page.click('#budget-save');
    await page.waitForFunction(() => /10,000/.test(document.querySelector('#budgets-table tbody')?.textContent ?? ''));
    const c = app.client();
    await c.login('root', ROOT_PW);
    const list = (await c.json('GET', '/api/admin/budgets')).body.budgets;
    t.match(
      list,
      [{ scope: 'user', subject_id: bob, metric: 'tokens', period: 'day', amount: 10000, used: 2500 }],
      'one budget, its amount changed',
    );

    await page.click('#budgets-table button[aria-label="Remove the budget of bob"]');
    await page.waitForSelector('#budgets-table:has-text("No budgets.")');
    t.same((await c.json('GET', '/api/admin/budgets')).body.budgets, [], 'removed');

    // A team's budget: the team is chosen by name, "Organisation / Team", from every organisation.
    const org = (await c.json('POST', '/api/identity/organisations', { name: 'Acme' })).body as { id: number };
    const team = (await c.json('POST', `/api/identity/organisations/${org.id}/teams`, { name: 'Finance' })).body as {
      id: number;
    };
    await page.reload();
    await page.waitForSelector('#budget-form');
    await page.selectOption('#budget-scope', 'team');
    await page.waitForSelector('select#budget-team');
    t.same(
      await page.$$eval('select#budget-team option', (os) => os.map((o) => o.textContent)),
      ['Choose a team…', 'Acme / Finance'],
      'the teams by name',
    );
    await page.fill('#budget-amount', '5');
    await page.click('#budget-save');
    await page.waitForSelector('#budget-form-status:has-text("Choose a team.")');
    t.same(
      (await c.json('GET', '/api/admin/budgets')).body.budgets,
      [],
      'no team chosen: the form says so, nothing sent',
    );
    await page.selectOption('select#budget-team', { label: 'Acme / Finance' });
    await page.selectOption('#budget-metric', 'cost');
    await page.click('#budget-save');
    await page.waitForSelector('#budgets-table tbody tr td:has-text("Finance")');
    t.match(
      (await c.json('GET', '/api/admin/budgets')).body.budgets,
      [{ scope: 'team', subject_id: team.id, metric: 'cost', amount: 5 }],
      "the team's budget",
    );
    t.same(await axeProblems(page), [], 'axe: the team form');
  });
}
