import t from 'tap';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import { logAction } from '../../domain/action-log.js';
import { addUser, startTestApp } from '../helpers/app.js';
import { browserUnavailable, launch, screenshot, settled } from '../helpers/browser.js';
import { dbInsertId, dbRun } from '../helpers/db.js';

const ROOT_PW = 'root-password-123';
const require = createRequire(import.meta.url);
// axe-core's browser build; evaluated through the DevTools protocol, so the page's CSP
// (script-src 'self', no inline script) stays as it is for the scan.
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/** axe-core's serious and critical violations on the page, as `rule: help (targets)`. */
async function seriousIssues(page: Page): Promise<string[]> {
  await settled(page);
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE);
  const violations = (await page.evaluate(async () => {
    const w = window as unknown as { axe: { run(ctx: Document, opts: object): Promise<{ violations: unknown[] }> } };
    return (await w.axe.run(document, { resultTypes: ['violations'] })).violations;
  })) as Violation[];
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map(
      (v) =>
        `${v.id} (${v.impact}): ${v.help} — ${v.nodes
          .slice(0, 5)
          .map((n) => n.target.join(' '))
          .join(', ')}`,
    );
}

const why = browserUnavailable();
if (why) t.plan(0, why);
else {
  t.test(
    'axe-core: the login page and every admin page have no serious or critical issue, at 1280 and 390 px, light and dark',
    async (t) => {
      const app = await startTestApp(t);
      const root = await addUser(app.database, 'root', ROOT_PW, { superuser: true, email: 'root@local.test' });
      const bob = await addUser(app.database, 'bob', 'bob-password-123');
      // Content on every page: a role with a policy, an assignment, an organisation with a team and a policy, log entries.
      const roleId = await dbInsertId(
        app.database.sql,
        "INSERT INTO data_roles (name, description) VALUES ('sales_eu', 'EU sales rows')",
      );
      await dbRun(
        app.database.sql,
        `INSERT INTO data_policies (role_id, table_name, allowed_columns, row_filter) VALUES (?, 'sales', '["region"]', '{"column":"region","op":"eq","value":"EU"}')`,
        roleId,
      );
      await dbRun(app.database.sql, 'INSERT INTO user_data_roles (user_id, role_id) VALUES (?, ?)', bob.id, roleId);
      const org = await dbInsertId(app.database.sql, "INSERT INTO organisations (name) VALUES ('Acme')");
      const team = await dbInsertId(
        app.database.sql,
        "INSERT INTO teams (organisation_id, name) VALUES (?, 'Ops')",
        org,
      );
      await dbRun(app.database.sql, 'INSERT INTO team_members (team_id, user_id) VALUES (?, ?)', team, bob.id);
      await dbRun(
        app.database.sql,
        "INSERT INTO agent_policies (organisation_id, name, applies_to, denied_tools) VALUES (?, 'no mail', 'all', '[\"send_email\"]')",
        org,
      );
      await logAction(app.database.sql, { event: 'identity.team.created', actorId: root.id, data: { team_id: team } });
      await logAction(app.database.sql, {
        event: 'bi.denied',
        severity: 'critical',
        subjectId: bob.id,
        data: { table: 'payroll' },
      });

      const browser = await launch(t);
      for (const [width, scheme] of [
        [1280, 'light'],
        [390, 'light'],
        [1280, 'dark'],
        [390, 'dark'],
      ] as const) {
        const page = await browser.newPage({ viewport: { width, height: 900 }, colorScheme: scheme });
        const at = `${width}px, ${scheme}`;
        await page.goto(app.url + '/#/login');
        await page.waitForSelector('#username');
        // The page follows the system setting: dark colours (style.css) when the system is dark.
        const bg = await page.evaluate(() =>
          getComputedStyle(document.documentElement).getPropertyValue('--bg').trim(),
        );
        t.equal(bg, scheme === 'dark' ? '#0d1117' : '#f6f7f9', `${scheme} colours at ${width}px`);
        t.same(await seriousIssues(page), [], `login page at ${at}`);
        await page.fill('#username', 'root');
        await page.fill('#password', ROOT_PW);
        await page.keyboard.press('Enter');
        await page.waitForSelector('#nav a[href="#/admin/data-roles"]', { state: 'attached' });
        const pages: [string, string][] = [
          ['identity', '#conn-form'],
          ['organisations', '#teams-table'],
          ['data-roles', '#roles-table'],
          ['data-assignments', '#assignments-table'],
          ['action-log', '#log-table'],
          ['sessions', '#sessions-unavailable'],
        ];
        for (const [id, ready] of pages) {
          await page.goto(`${app.url}/#/admin/${id}`);
          await page.waitForSelector(ready);
          if (id === 'data-roles') {
            await page.click('button[aria-label="Policies of sales_eu"]');
            await page.waitForSelector('#policies-table');
          }
          t.same(await seriousIssues(page), [], `admin page ${id} at ${at}`);
          if (width === 390) await screenshot(page, `axe-${id}-390${scheme === 'dark' ? '-dark' : ''}`);
        }
        await page.close();
      }
    },
  );
}
