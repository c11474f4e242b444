import t from 'tap';
import type { Page } from 'playwright-core';
import { start as startOidc } from '../../emulator/oidc.js';
import { start as startDirectory } from '../../emulator/directory.js';
import type { SandboxControl } from '../../web/index.js';
import { syncPorts } from '../helpers/directory.js';
import { addUser, startTestAppWithOrigin } from '../helpers/app.js';
import { browserUnavailable, checkNarrow, launch, screenshot, unlabelledControls } from '../helpers/browser.js';
import { dbRow, dbRows } from '../helpers/db.js';

const CLIENT_ID = 'airlock-ui-client';
const CLIENT_SECRET = 'ui-client-secret-never-shown-77';
const ROOT_PW = 'root-password-123';
// The OIDC user is also a directory user (seeded addresses are user<i>@example.test).
const DIR_USER = { sub: 'dir-user-1', email: 'user1@example.test', email_verified: true, name: 'Directory User One' };

async function passwordLogin(page: Page, url: string): Promise<void> {
  await page.goto(url + '/');
  await page.waitForSelector('#username');
  await page.fill('#username', 'root');
  await page.fill('#password', ROOT_PW);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#prompt');
}

const why = browserUnavailable();
if (why) t.plan(0, why);
else {
  t.test(
    'admin: SSO connection, directory sync with live status, teams linked to groups; SSO sign-in in the browser',
    async (t) => {
      const dir = await startDirectory();
      t.teardown(() => dir.close());
      dir.seed({ users: 6, groups: 2, memberships: 8 });
      dir.latencyMs = 150; // long enough to see the job running
      const sandboxes: SandboxControl = { killForUser: () => {}, policyChanged: () => {} };
      const ports = syncPorts(sandboxes);
      const { app, origin } = await startTestAppWithOrigin(t, {
        services: ports.services,
        env: { AIRLOCK_GOOGLE_DIRECTORY_BASE_URL: dir.url, AIRLOCK_GOOGLE_TOKEN_URL: dir.tokenUrl },
      });
      // The IdP starts once the app's origin (its client's redirect URI) is fixed.
      const idp = await startOidc({
        clients: [
          {
            client_id: CLIENT_ID,
            client_secret: CLIENT_SECRET,
            redirect_uris: [`${origin}/accounts/google/login/callback/`],
          },
        ],
        users: [DIR_USER],
      });
      t.teardown(() => idp.close());
      const runner = ports.runner();
      t.teardown(() => runner.idle());
      await addUser(app.database, 'root', ROOT_PW, { superuser: true, email: 'root@local.test' });

      const browser = await launch(t);
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      await passwordLogin(page, app.url);

      // --- SSO connection: create through the form.
      await page.click('#nav a[href="#/admin/identity"]');
      await page.waitForSelector('#conn-form');
      t.match(await page.textContent('#conn-summary'), /No connection yet/);
      for (const id of [
        'conn-issuer',
        'conn-client-id',
        'conn-client-secret',
        'conn-service-account',
        'conn-admin-email',
        'conn-active',
      ]) {
        t.equal(await page.locator(`label[for=${id}]`).count(), 1, `#${id} has a label`);
      }
      await page.fill('#conn-issuer', idp.url);
      await page.fill('#conn-client-id', CLIENT_ID);
      await page.fill('#conn-client-secret', CLIENT_SECRET);
      await page.fill('#conn-service-account', JSON.stringify(dir.serviceAccount));
      await page.fill('#conn-admin-email', `admin@${dir.domain}`);
      await page.click('#conn-save');
      await page.waitForFunction(() =>
        /Client secret: stored/.test(document.querySelector('#conn-summary')?.textContent ?? ''),
      );
      t.match(await page.textContent('#conn-summary'), /Group sync: configured/);
      t.match(await page.textContent('#conn-status'), /Connection created/);
      const html = await page.content();
      t.notOk(html.includes(CLIENT_SECRET), 'the client secret is not on the page after saving');
      t.notOk(html.includes('PRIVATE KEY'), 'the service-account key is not on the page after saving');
      const stored = await dbRows(app.database.sql, 'SELECT issuer, client_id, is_active FROM idp_connections');
      t.same(stored, [{ issuer: idp.url, client_id: CLIENT_ID, is_active: 1 }], 'connection stored');

      // A bad edit shows the server's error plainly (message and code).
      await page.fill('#conn-service-account', '{"type":"not a key"}');
      await page.click('#conn-save');
      await page.waitForSelector('#conn-status [role=alert]');
      t.match(await page.textContent('#conn-status'), /ERR_IDP_SERVICE_ACCOUNT/);
      await page.fill('#conn-service-account', '');

      // --- Directory sync: start, watch the live status, see the result.
      await page.click('#sync-start');
      await page.waitForFunction(() =>
        /running|pending/.test(document.querySelector('#sync-job-status')?.textContent ?? ''),
      );
      t.ok(await page.isDisabled('#sync-start'), 'start is disabled while a job runs');
      await page.waitForFunction(
        () => /succeeded|failed/.test(document.querySelector('#sync-job-status')?.textContent ?? ''),
        undefined,
        { timeout: 15000 },
      );
      t.equal(await page.textContent('#sync-job-status'), 'succeeded');
      t.match(await page.textContent('#sync-result'), /users created\s*6/);
      t.match(await page.textContent('#sync-result'), /groups created\s*2/);
      t.ok(await page.isEnabled('#sync-start'), 'start enabled again');
      await screenshot(page, 'admin-identity');
      t.same(await unlabelledControls(page), [], 'SSO & sync: every control has an accessible name');
      await checkNarrow(t, page, 'admin-identity');

      // A failing sync: the job's error code and the upstream status are shown plainly.
      dir.fail({ pathIncludes: '/users', status: 403, reason: 'forbidden' });
      await page.click('#sync-start');
      await page.waitForFunction(
        () => /failed/.test(document.querySelector('#sync-job-status')?.textContent ?? ''),
        undefined,
        { timeout: 15000 },
      );
      t.match(await page.textContent('#sync-error'), /ERR_SYNC_UPSTREAM/);
      t.match(await page.textContent('#sync-error'), /upstream HTTP 403/);
      await screenshot(page, 'admin-identity-sync-failed');

      // --- Organisation and a team linked to a synced group (the picker lists external groups).
      await page.click('#nav a[href="#/admin/organisations"]');
      await page.waitForSelector('#org-form');
      await page.fill('#org-name', 'Sales');
      await page.click('#org-form button[type=submit]');
      await page.waitForSelector('#team-form');
      const options = await page.locator('#team-group option').allTextContents();
      t.ok(
        options.some((o) => o.includes(`group0@${dir.domain}`)),
        'team picker lists synced groups',
      );
      await page.fill('#team-name', 'Group zero team');
      await page.selectOption('#team-group', { label: options.find((o) => o.includes(`group0@${dir.domain}`))! });
      await page.click('#team-form button[type=submit]');
      await page.waitForFunction(() =>
        /Group zero team/.test(document.querySelector('#teams-table')?.textContent ?? ''),
      );
      t.match(
        await page.textContent('#teams-table'),
        new RegExp(`group0@${dir.domain}`),
        'team shows its linked group',
      );
      // An agent policy for that organisation.
      // Tools are checkboxes from the catalogue (a typo cannot deny nothing).
      await page.fill('#ap-name', 'no-mail');
      await page.check('#ap-denied-tools input[value="send_email"]');
      await page.click('#ap-form button[type=submit]');
      await page.waitForFunction(() =>
        /no-mail/.test(document.querySelector('#agent-policies-table')?.textContent ?? ''),
      );
      t.match(await page.textContent('#agent-policies-table'), /send_email/);
      t.same(
        await unlabelledControls(page),
        [],
        'teams & agent policies: every control (team link pickers too) has an accessible name',
      );
      await page.setViewportSize({ width: 390, height: 900 });
      t.ok(await page.isVisible('#team-form button[type=submit]'), 'usable at 390px');
      await page.setViewportSize({ width: 1280, height: 900 });
      await checkNarrow(t, page, 'admin-organisations');

      // --- Live sessions: the operator API is not on this server yet; the page says so.
      await page.click('#nav a[href="#/admin/sessions"]');
      await page.waitForSelector('#sessions-unavailable');
      t.match(await page.textContent('#sessions-unavailable'), /not available/);

      // --- SSO sign-in in a fresh browser: the button, the real redirect chain, signed in on chat.
      const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const sso = await ctx.newPage();
      await sso.goto(origin + '/');
      await sso.waitForSelector('#sso button');
      t.equal((await sso.textContent('#sso button'))?.trim(), 'Sign in with Google');
      await screenshot(sso, 'login-sso');
      await sso.click('#sso button');
      await sso.waitForURL((u) => u.origin === idp.url && u.pathname.startsWith('/interaction/'));
      await sso.click(`a:has-text("${DIR_USER.email}")`);
      await sso.waitForURL((u) => u.origin === origin && u.hash === '#/chat');
      await sso.waitForSelector('#prompt');
      t.match(await sso.textContent('#who'), /User 1/, 'signed in as the synced account (its directory name)');
      const me = await sso.evaluate(async () => (await fetch('/api/auth/me')).json());
      t.equal(me.email, DIR_USER.email);
      const linked = (await dbRow(
        app.database.sql,
        'SELECT COUNT(*) AS n FROM external_identities WHERE sub = ?',
        DIR_USER.sub,
      )) as { n: number };
      t.equal(linked.n, 1, 'external identity recorded');
      const users = (await dbRow(
        app.database.sql,
        'SELECT COUNT(*) AS n FROM users WHERE lower(email) = ?',
        DIR_USER.email,
      )) as { n: number };
      t.equal(users.n, 1, 'the synced account was used, not a second one');
      await screenshot(sso, 'chat-after-sso');
      await ctx.close();

      // A shared chat's link opened signed out, then single sign-on: the page comes back to the link
      // (the token here names no share, so the page says the chat is not found, signed in).
      const ctx2 = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const viaShare = await ctx2.newPage();
      await viaShare.goto(origin + '/#/share/made-up-share-token-for-sso');
      await viaShare.waitForSelector('#sso button');
      await viaShare.click('#sso button');
      await viaShare.waitForURL((u) => u.origin === idp.url && u.pathname.startsWith('/interaction/'));
      await viaShare.click(`a:has-text("${DIR_USER.email}")`);
      await viaShare.waitForURL((u) => u.origin === origin && u.hash === '#/share/made-up-share-token-for-sso');
      t.pass('after single sign-on the page is back on the shared link');
      t.equal(await viaShare.evaluate(() => sessionStorage.length), 0, 'the remembered link is used once');
      await ctx2.close();
    },
  );
}
