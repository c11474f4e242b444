/**
 * What the admin pages' move to TypeScript + Preact touched and no other test covered: every
 * delete asks first and Cancel changes nothing; "Older entries" puts keyboard focus on the first
 * new row; an existing team is linked to a directory group from its row and unlinked again;
 * leaving a page ends its timers (the page's effects are cleaned up).
 */
import t from 'tap';
import type { Page } from 'playwright-core';
import { logAction } from '../../domain/action-log.js';
import { adminRig, openAdmin } from '../helpers/admin-browser.js';
import { browserUnavailable } from '../helpers/browser.js';
import { dbCount, dbInsertId, dbRow, dbRun } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';
import type { TestApp } from '../helpers/app.js';

const text = async (page: Page, sel: string) => (await page.textContent(sel)) ?? '';
const count = (app: TestApp, sql: string, ...args: unknown[]) => dbCount(app.database.sql, sql, ...args);

const why = browserUnavailable();
if (why) t.plan(0, why);
else {
  t.test(
    'every delete asks first: Cancel changes nothing, OK deletes (policy, role, assignment, agent policy, team, organisation)',
    async (t) => {
      const { app, page, dialogs, answer } = await adminRig(t);
      /** Click `button` twice: cancelled (still there), then accepted; returns the question asked. */
      const confirmTwice = async (button: string, stillThere: () => Promise<boolean>, gone: () => Promise<boolean>) => {
        const before = dialogs.length;
        answer.accept = false;
        await page.click(button);
        await waitFor(() => dialogs.length > before, `${button}: the question`);
        t.equal(dialogs.length, before + 1, `${button}: asks`);
        t.ok(await stillThere(), `${button}: Cancel keeps it`);
        answer.accept = true;
        await page.click(button);
        t.ok(await waitFor(gone, `${button}: deleted`), `${button}: OK deletes it`);
        return dialogs[before];
      };

      // A role with a policy, assigned to bob.
      await openAdmin(page, app.url, 'data-roles', '#role-form');
      await page.fill('#role-name', 'gone_soon');
      await page.click('#role-create');
      await page.waitForSelector('#policy-form');
      await page.fill('#policy-table', 'sales');
      await page.click('#policy-save');
      await page.waitForFunction(() => /saved/.test(document.querySelector('#policy-status')?.textContent ?? ''));
      const policies = () => count(app, "SELECT COUNT(*) AS n FROM data_policies WHERE table_name = 'sales'");
      const q1 = await confirmTwice(
        'button[aria-label="Delete policy on sales"]',
        async () => (await policies()) === 1,
        async () => (await policies()) === 0 && /No policies/.test(await text(page, '#policies-table')),
      );
      t.match(q1, /Delete the policy on sales from role gone_soon/);

      await openAdmin(page, app.url, 'data-assignments', '#assign-form');
      await page.fill('#assign-user', 'bob');
      await page.selectOption('#assign-role', { label: 'gone_soon' });
      await page.click('#assign-create');
      await page.waitForFunction(() =>
        /gone_soon/.test(document.querySelector('#assignments-table')?.textContent ?? ''),
      );
      const assigned = () => count(app, 'SELECT COUNT(*) AS n FROM user_data_roles');
      const q2 = await confirmTwice(
        'button[aria-label="Remove gone_soon from bob"]',
        async () => (await assigned()) === 1,
        async () => (await assigned()) === 0 && /No assignments/.test(await text(page, '#assignments-table')),
      );
      t.match(q2, /Remove role gone_soon from bob/);

      await openAdmin(page, app.url, 'data-roles', '#roles-table');
      const roles = () => count(app, "SELECT COUNT(*) AS n FROM data_roles WHERE name = 'gone_soon'");
      const q3 = await confirmTwice(
        'button[aria-label="Delete role gone_soon"]',
        async () => (await roles()) === 1,
        async () => (await roles()) === 0 && !/gone_soon/.test(await text(page, '#roles-table')),
      );
      t.match(q3, /Delete role gone_soon\? Its policies and assignments go too/);

      // An organisation with a team and an agent policy.
      await openAdmin(page, app.url, 'organisations', '#org-form');
      await page.fill('#org-name', 'Doomed');
      await page.click('#org-create');
      await page.waitForSelector('#team-form');
      await page.fill('#team-name', 'Crew');
      await page.click('#team-create');
      await page.waitForFunction(() => /Crew/.test(document.querySelector('#teams-table')?.textContent ?? ''));
      await page.fill('#ap-name', 'quiet');
      await page.click('#ap-create');
      await page.waitForFunction(() =>
        /quiet/.test(document.querySelector('#agent-policies-table')?.textContent ?? ''),
      );
      const aps = () => count(app, 'SELECT COUNT(*) AS n FROM agent_policies');
      const q4 = await confirmTwice(
        'button[aria-label="Delete policy quiet"]',
        async () => (await aps()) === 1,
        async () => (await aps()) === 0 && /No agent policies/.test(await text(page, '#agent-policies-table')),
      );
      t.match(q4, /Delete agent policy quiet/);
      const teams = () => count(app, 'SELECT COUNT(*) AS n FROM teams');
      const q5 = await confirmTwice(
        'button[aria-label="Delete team Crew"]',
        async () => (await teams()) === 1,
        async () => (await teams()) === 0 && /No teams yet/.test(await text(page, '#teams-table')),
      );
      t.match(q5, /Delete team Crew/);
      const orgs = () => count(app, 'SELECT COUNT(*) AS n FROM organisations');
      const q6 = await confirmTwice(
        '#org-delete',
        async () => (await orgs()) === 1,
        async () => (await orgs()) === 0 && /No organisations yet/.test(await text(page, '.admin.orgs')),
      );
      t.match(q6, /Delete organisation Doomed\? Its teams and agent policies are deleted too/);
      t.match(await text(page, '#org-status'), /Organisation Doomed deleted/);
    },
  );

  t.test('action log: "Older entries" pressed with the keyboard puts focus on the first new row', async (t) => {
    const { app, page, root, bob } = await adminRig(t);
    for (let i = 0; i < 60; i++)
      await logAction(app.database.sql, { event: 'test.focus', actorId: root, subjectId: bob, data: { i } });
    await openAdmin(page, app.url, 'action-log', '#log-table');
    await page.fill('#log-event', 'test.*');
    await page.press('#log-event', 'Enter');
    await page.waitForFunction(() => document.querySelectorAll('#log-table tbody tr').length === 50);
    t.match(await text(page, '#log-count'), /50 entries shown; older ones remain/);
    await page.focus('#log-more');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.querySelectorAll('#log-table tbody tr').length === 60);
    const focused = await page.evaluate(() => {
      const el = document.activeElement;
      const rows = Array.from(document.querySelectorAll('#log-table tbody tr'));
      return { tag: el?.tagName, index: el ? rows.indexOf(el) : -1, data: el?.querySelector('pre')?.textContent ?? '' };
    });
    t.equal(focused.tag, 'TR', 'a row has focus, not the body');
    t.equal(focused.index, 50, 'the first of the rows just added');
    t.equal(JSON.parse(focused.data).i, 9, 'the 51st newest entry');
    t.match(await text(page, '#log-count'), /^60 entries shown\.$/);
  });

  t.test(
    'an existing team is linked to a directory group from its row, then unlinked (members managed here again)',
    async (t) => {
      const { app, page, bob } = await adminRig(t);
      const db = app.database.sql;
      const conn = await dbInsertId(
        db,
        "INSERT INTO idp_connections (provider, display_name, issuer, client_id) VALUES ('google', 'Google', 'https://idp.example.test', 'cid')",
      );
      const group = await dbInsertId(
        db,
        "INSERT INTO external_groups (connection_id, directory_id, email, name, synced_at) VALUES (?, 'g1', 'ops@example.test', 'Ops group', '2024-01-01T00:00:00Z')",
        conn,
      );
      await openAdmin(page, app.url, 'organisations', '#org-form');
      await page.fill('#org-name', 'Linkers');
      await page.click('#org-create');
      await page.waitForSelector('#team-form');
      await page.fill('#team-name', 'Ops');
      await page.click('#team-create');
      await page.waitForFunction(() => /Ops/.test(document.querySelector('#teams-table')?.textContent ?? ''));
      const teamId = (await dbRow<{ id: number }>(db, "SELECT id FROM teams WHERE name = 'Ops'"))!.id;
      await page.fill(`#team-${teamId}-add`, 'bob');
      await page.click('button[aria-label="Add member to team Ops"]');
      await page.waitForFunction(
        (id) => /bob/.test(document.querySelector(`#team-${id}-members`)?.textContent ?? ''),
        teamId,
      );

      await page.selectOption(`#team-${teamId}-group`, String(group));
      await page.click('button[aria-label="Link Ops to the chosen group"]');
      // Wait for the row's members cell to change: the row's group picker names the group (its
      // e-mail included) from the start, so the group's name alone shows nothing.
      await page.waitForFunction(() =>
        /\(from the directory\)/.test(document.querySelector('#teams-table tbody tr')?.textContent ?? ''),
      );
      t.equal(
        (await dbRow<{ external_group_id: number }>(db, 'SELECT external_group_id FROM teams WHERE id = ?', teamId))
          ?.external_group_id,
        group,
        'linked',
      );
      t.match(
        await text(page, '#teams-table tbody tr'),
        /0 \(from the directory\)/,
        'the group (no members synced) owns the members now',
      );
      t.equal(await page.locator(`#team-${teamId}-add`).count(), 0, 'no member field on a linked team');
      t.equal(
        await page.$eval(`#team-${teamId}-group`, (s: HTMLSelectElement) => s.value),
        String(group),
        'the row picker shows the link',
      );

      await page.selectOption(`#team-${teamId}-group`, '');
      await page.click('button[aria-label="Link Ops to the chosen group"]');
      await page.waitForSelector(`#team-${teamId}-add`);
      t.match(await text(page, '#teams-table tbody tr'), /none \(members managed here\)/, 'unlinked');
      t.equal(
        (
          await dbRow<{ external_group_id: number | null }>(
            db,
            'SELECT external_group_id FROM teams WHERE id = ?',
            teamId,
          )
        )?.external_group_id,
        null,
      );
      void bob;
    },
  );

  t.test('leaving the directory-sync page ends its polling (the page is unmounted, not left running)', async (t) => {
    const { app, page } = await adminRig(t);
    const conn = await dbInsertId(
      app.database.sql,
      "INSERT INTO idp_connections (provider, display_name, issuer, client_id) VALUES ('google', 'Google', 'https://idp.example.test', 'cid')",
    );
    // A job that stays "running": the page polls it every 0.7 s while it is shown.
    await dbRun(
      app.database.sql,
      "INSERT INTO directory_sync_jobs (connection_id, status, trigger, started_at) VALUES (?, 'running', 'manual', '2024-01-01T00:00:00Z')",
      conn,
    );
    const polls: number[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/api/identity/directory-sync')) polls.push(Date.now());
    });
    await openAdmin(page, app.url, 'identity', '#sync-job-status');
    t.equal(await text(page, '#sync-job-status'), 'running');
    t.ok(await page.isDisabled('#sync-start'), 'no second start while one runs');
    await waitFor(() => polls.length >= 2, 'a second read of the running job');
    t.ok(polls.length >= 2, `polled while shown (${polls.length} reads)`);
    await page.click('#nav a[href="#/admin/action-log"]');
    await page.waitForSelector('#log-table');
    const left = polls.length;
    // Proving that nothing happens takes time: 2 s is almost three of the page's 0.7 s intervals.
    await new Promise((r) => setTimeout(r, 2000));
    t.equal(polls.length, left, 'no read after the page was left');
  });
}
