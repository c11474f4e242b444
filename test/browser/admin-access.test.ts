import t from 'tap';
import { addUser, startTestApp, TEST_SECRETS } from '../helpers/app.js';
import {
  browserUnavailable,
  checkNarrow,
  FOCUS_RING,
  focusRing,
  launch,
  screenshot,
  tabTo,
  unlabelledControls,
} from '../helpers/browser.js';
import { dbCount, dbRow } from '../helpers/db.js';

const ROOT_PW = 'root-password-123';

const why = browserUnavailable();
if (why) t.plan(0, why);
else {
  t.test(
    'admin: data role, policy with a row filter (bad one refused plainly), assignment, effective policy, action log',
    async (t) => {
      const app = await startTestApp(t);
      await addUser(app.database, 'root', ROOT_PW, { superuser: true, email: 'root@local.test' });
      const bob = await addUser(app.database, 'bob', 'bob-password-123');
      const browser = await launch(t);
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      await page.goto(app.url + '/');
      await page.waitForSelector('#username');
      await page.fill('#username', 'root');
      await page.fill('#password', ROOT_PW);
      await page.keyboard.press('Enter');
      await page.waitForSelector('#prompt');

      // --- A role.
      await page.click('#nav a[href="#/admin/data-roles"]');
      await page.waitForSelector('#role-form');
      t.match(await page.textContent('#roles-table'), /bi_admin/, 'the built-in role is listed');
      t.equal(
        await page.locator('#roles-table .badge').first().textContent(),
        'built-in',
        'the built-in role carries its badge',
      );
      t.notMatch(await page.textContent('#roles-table'), /\[object /, 'no cell renders an object as text');
      await page.fill('#role-name', 'sales_eu');
      await page.fill('#role-description', 'EU sales rows');
      await page.click('#role-create');
      await page.waitForSelector('#policy-form');
      t.match(await page.textContent('#roles-table'), /sales_eu/);
      t.match(await page.textContent('#role-detail h2'), /Policies of sales_eu/, 'the new role is opened');

      // --- A bad row filter: the server's validation error is shown (code, message, field problems).
      await page.fill('#policy-table', 'sales');
      await page.fill('#policy-columns', 'region, amount');
      await page.fill('#policy-filter', '{"column":"region","op":"like","value":"EU%"}');
      await page.click('#policy-save');
      await page.waitForSelector('#policy-status [role=alert]');
      const err = await page.textContent('#policy-status');
      t.match(err, /ERR_DATA_INVALID/, 'error code shown');
      t.match(err, /row_filter/, 'message names the row filter');
      t.equal(await page.getAttribute('#policy-filter', 'aria-invalid'), 'true', 'the filter box is marked invalid');
      t.equal(
        await dbCount(
          app.database.sql,
          'SELECT COUNT(*) AS n FROM data_policies p JOIN data_roles r ON r.id = p.role_id WHERE r.name = ?',
          'sales_eu',
        ),
        0,
        'nothing stored',
      );
      // Not even JSON: refused before sending, said plainly.
      await page.fill('#policy-filter', '{"column": ');
      await page.click('#policy-save');
      await page.waitForFunction(() =>
        /not valid JSON/.test(document.querySelector('#policy-status')?.textContent ?? ''),
      );
      await screenshot(page, 'admin-policy-error');

      // --- A good filter built with the condition builder (region = EU AND owner = $user_id).
      await page.fill('#policy-filter', '{}');
      await page.fill('#leaf-column', 'region');
      await page.selectOption('#leaf-op', 'eq');
      await page.fill('#leaf-value', 'EU');
      await page.click('#leaf-add');
      await page.fill('#leaf-column', 'owner_id');
      await page.fill('#leaf-value', '$user_id');
      await page.click('#leaf-add');
      t.same(
        JSON.parse(await page.inputValue('#policy-filter')),
        {
          all: [
            { column: 'region', op: 'eq', value: 'EU' },
            { column: 'owner_id', op: 'eq', value: '$user_id' },
          ],
        },
        'the builder writes the JSON filter',
      );
      await page.click('#policy-save');
      await page.waitForFunction(() => /saved/.test(document.querySelector('#policy-status')?.textContent ?? ''));
      t.match(await page.textContent('#policies-table'), /sales/);
      t.match(await page.textContent('#policies-table'), /amount, region|region, amount/);
      const stored = (await dbRow(
        app.database.sql,
        'SELECT table_name, allowed_columns, row_filter FROM data_policies p JOIN data_roles r ON r.id = p.role_id WHERE r.name = ?',
        'sales_eu',
      )) as Record<string, string>;
      t.equal(stored.table_name, 'sales');
      t.same(JSON.parse(stored.row_filter).all.length, 2, 'filter stored');
      await screenshot(page, 'admin-data-roles');
      t.same(
        await unlabelledControls(page),
        [],
        'data roles: every control (role form, policy editor, builder) has an accessible name',
      );
      await checkNarrow(t, page, 'admin-data-roles');

      // --- Assignment and the effective policy with its explanation.
      await page.click('#nav a[href="#/admin/data-assignments"]');
      await page.waitForSelector('#assign-form');
      // The user field suggests accounts as you type (GET /api/admin/users) and takes a username.
      await page.fill('#assign-user', 'BO');
      await page.waitForSelector('#assign-user-options option[value="bob"]', { state: 'attached' });
      t.match(
        await page.getAttribute('#assign-user-options option[value="bob"]', 'label'),
        new RegExp(`id ${bob.id}`),
        'the suggestion shows the id',
      );
      // A name nobody has: said plainly, nothing sent.
      await page.fill('#assign-user', 'nobody-here');
      await page.click('#assign-create');
      await page.waitForSelector('#assign-status [role=alert]');
      t.match(await page.textContent('#assign-status'), /No user is named "nobody-here"/);
      t.equal(await page.getAttribute('#assign-user', 'aria-invalid'), 'true');
      await page.fill('#assign-user', 'bob');
      await page.selectOption('#assign-role', { label: 'sales_eu' });
      await page.click('#assign-create');
      await page.waitForFunction(() => /bob/.test(document.querySelector('#assignments-table')?.textContent ?? ''));
      t.match(await page.textContent('#assignments-table'), /sales_eu/);
      // Assigning twice: the server's conflict is shown plainly.
      await page.fill('#assign-user', String(bob.id));
      await page.selectOption('#assign-role', { label: 'sales_eu' });
      await page.click('#assign-create');
      await page.waitForSelector('#assign-status [role=alert]');
      t.match(await page.textContent('#assign-status'), /ERR_DATA_ASSIGNMENT_EXISTS/);

      await page.click('button[aria-label="Effective policy of bob"]');
      await page.waitForSelector('#eff-tables');
      t.equal(await page.textContent('#eff-bi'), 'yes', 'bob has the bi bit');
      const eff = await page.textContent('#eff-tables');
      t.match(eff, /sales/);
      t.match(eff, /amount, region/);
      t.match(eff, /"EU"/, 'row filter shown');
      t.match(eff, new RegExp(`"value": ${bob.id}`), "$user_id substituted with bob's id");
      t.match(eff, /sales_eu on sales/, 'explains which grant gives it');
      t.ok((await page.textContent('#eff-explanation'))?.length, 'top-level explanation shown');
      await screenshot(page, 'admin-effective-policy');
      t.same(await unlabelledControls(page), [], 'assignments: every control has an accessible name');
      await page.setViewportSize({ width: 390, height: 900 });
      t.ok(await page.isVisible('#eff-show'), 'usable at 390px');
      await page.setViewportSize({ width: 1280, height: 900 });
      await checkNarrow(t, page, 'admin-effective-policy');

      // --- Action log: a bi.denied from the internal endpoint, found by event and severity filters.
      const denied = await fetch(`${app.url}/api/internal/bi-audit`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TEST_SECRETS.MCP_INTERNAL_SECRET}`, 'content-type': 'application/json' },
        body: JSON.stringify({ user_id: bob.id, table: 'payroll', decision: 'denied', reason: 'no grant on payroll' }),
      });
      t.equal(denied.status, 200);
      await page.click('#nav a[href="#/admin/action-log"]');
      await page.waitForSelector('#log-table');
      t.match(await page.textContent('#log-table'), /data\.role\.created/, 'unfiltered log lists configuration events');
      await page.fill('#log-event', 'bi.denied');
      await page.selectOption('#log-severity', 'critical');
      await page.click('#log-apply');
      await page.waitForFunction(
        () => !/data\.role\.created/.test(document.querySelector('#log-table')?.textContent ?? 'data.role.created'),
      );
      const rows = await page.locator('#log-table tbody tr').allTextContents();
      t.equal(rows.length, 1, 'one bi.denied entry');
      t.match(rows[0], /bi\.denied/);
      t.match(rows[0], /critical/);
      await page.selectOption('#log-severity', 'info');
      await page.click('#log-apply');
      await page.waitForFunction(() =>
        /No entries match/.test(document.querySelector('#log-table')?.textContent ?? ''),
      );
      await page.fill('#log-event', 'bi.*');
      await page.selectOption('#log-severity', 'critical');
      await page.click('#log-apply');
      await page.waitForFunction(() => /bi\.denied/.test(document.querySelector('#log-table')?.textContent ?? ''));
      await screenshot(page, 'admin-action-log');
      t.same(await unlabelledControls(page), [], 'action log: every filter has an accessible name');
      await checkNarrow(t, page, 'admin-action-log');
      // A bad filter: the server's validation error, plainly.
      await page.fill('#log-event', 'DROP TABLE');
      await page.click('#log-apply');
      await page.waitForSelector('#log-status [role=alert]');
      t.match(await page.textContent('#log-status'), /ERR_DATA_INVALID/);

      // Keyboard: the nav and the role form are reachable with Tab and show a visible focus ring.
      await page.click('#nav a[href="#/admin/data-roles"]');
      await page.waitForSelector('#role-name');
      await page.focus('#role-name');
      const outline = await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle);
      t.not(outline, 'none', 'focused input has a visible outline');
      // Tab through the header to the Assignments link and follow it with Enter; open a role's policies with the keyboard.
      await page.focus('#nav a[href="#/chat"]');
      for (let i = 0; i < 12; i++) {
        if ((await page.evaluate(() => document.activeElement?.getAttribute('href'))) === '#/admin/data-roles') break;
        await page.keyboard.press('Tab');
      }
      t.equal(
        await page.evaluate(() => document.activeElement?.getAttribute('href')),
        '#/admin/data-roles',
        'nav reachable with Tab',
      );
      const linkRing = await focusRing(page);
      t.equal(linkRing?.tag, 'a');
      t.ok(linkRing?.focusVisible, 'keyboard focus on the link: :focus-visible applies');
      t.match(linkRing, FOCUS_RING, "the link reached by Tab shows style.css's 3px amber ring");
      await page.keyboard.press('Tab'); // Assignments
      await page.keyboard.press('Enter');
      await page.waitForSelector('#assign-form');
      t.match(page.url(), /#\/admin\/data-assignments$/, 'Enter follows the focused link');
      await page.goBack();
      await page.waitForSelector('#roles-table');
      await page.focus('#main'); // where the page puts focus after navigating; Tab goes on from there
      t.ok(
        await tabTo(page, 'button[aria-label="Policies of sales_eu"]'),
        "a role's Policies button is reachable with Tab",
      );
      const buttonRing = await focusRing(page);
      t.equal(buttonRing?.tag, 'button');
      t.ok(buttonRing?.focusVisible, 'keyboard focus on the button: :focus-visible applies');
      t.match(buttonRing, FOCUS_RING, "the button reached by Tab shows style.css's 3px amber ring");
      await page.keyboard.press('Enter');
      await page.waitForSelector('#policies-table');
      await page.click('button[aria-label="Edit policy on sales"]');
      t.equal(await page.inputValue('#policy-table'), 'sales', 'Edit fills the form with the stored policy');
      t.equal(await page.evaluate(() => document.activeElement?.id), 'policy-table', 'and moves focus there');
    },
  );
}
