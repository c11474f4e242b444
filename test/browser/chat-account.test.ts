/**
 * The workspace account box on the chat page in a real browser, against the Google-shaped OAuth
 * emulator: Connect goes through the provider's redirect and back, Disconnect asks first, then
 * says whether Google revoked the grant, and tells the user what to do when it did not.
 */
import t from 'tap';
import { start as startOAuth } from '../../emulator/google-oauth.js';
import { addUser, startTestAppWithOrigin } from '../helpers/app.js';
import { browserUnavailable, launch, screenshot } from '../helpers/browser.js';
import { dbCount } from '../helpers/db.js';

const PASSWORD = 'erin-password-1';

const why = browserUnavailable();
if (why) t.plan(0, why);
else {
  t.test('connect and disconnect the workspace account from the chat page', async (t) => {
    const oauth = await startOAuth({ email: 'erin@example.test' });
    t.teardown(() => oauth.close());
    // The provider sends the browser back to the public origin, so it must be the app's own.
    const { app } = await startTestAppWithOrigin(t, {
      env: {
        AIRLOCK_GOOGLE_CLIENT_ID: oauth.options.clientId!,
        AIRLOCK_GOOGLE_CLIENT_SECRET: oauth.options.clientSecret!,
        AIRLOCK_GOOGLE_AUTH_URL: oauth.authorizeUrl,
        AIRLOCK_GOOGLE_TOKEN_URL: oauth.tokenUrl,
        AIRLOCK_GOOGLE_REVOKE_URL: oauth.revokeUrl,
      },
    });
    await addUser(app.database, 'erin', PASSWORD);
    const accounts = () => dbCount(app.database.sql, 'SELECT COUNT(*) AS n FROM connected_accounts');

    const browser = await launch(t);
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const dialogs: string[] = [];
    let answer: 'accept' | 'dismiss' = 'accept';
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void (answer === 'accept' ? d.accept() : d.dismiss());
    });
    await page.goto(app.url + '/#/login');
    await page.fill('#username', 'erin');
    await page.fill('#password', PASSWORD);
    await page.keyboard.press('Enter');
    await page.waitForSelector('#connect-account');
    t.match(await page.textContent('#account'), /Not connected/, 'not connected at first');
    await page.waitForSelector('#model[data-demo="true"]');
    t.match(
      await page.textContent('#model'),
      /Demo model.*not a real AI model/,
      'the offline demo model is named as such',
    );

    const consents = () => oauth.requests.filter((r) => r.path === '/o/oauth2/v2/auth').length;
    const connect = async () => {
      // Start from a URL without ?account=… so the wait below sees the redirect back.
      await page.goto(app.url + '/#/chat');
      await page.waitForSelector('#connect-account');
      const before = consents();
      await page.click('#connect-account');
      // The emulator consents at once and redirects to the callback, which redirects home.
      await page.waitForURL(app.url + '/?account=connected');
      await page.waitForSelector('#disconnect-account');
      t.equal(consents(), before + 1, 'the browser went through the provider');
    };
    await connect();
    t.match(
      await page.textContent('#account'),
      /Connected as erin@example\.test\./,
      'the page names the connected account',
    );
    t.ok(
      oauth.requests.some((r) => r.path === '/token' && r.params.grant_type === 'authorization_code'),
      'the code was exchanged at the provider',
    );
    t.equal(await accounts(), 1, 'the account is stored');
    const [refresh] = oauth.issued.refresh;
    t.ok(refresh, 'offline access: a refresh token was issued');
    await screenshot(page, 'chat-account-connected');

    // Cancelling the confirmation keeps everything.
    answer = 'dismiss';
    // confirm() blocks the click handler, and Cancel returns before any request is made.
    await page.click('#disconnect-account');
    t.equal(dialogs.length, 1, 'Disconnect asks first');
    t.match(dialogs[0], /Disconnect your workspace account\?/);
    t.ok(await page.isVisible('#disconnect-account'), 'still connected after Cancel');
    t.notOk(
      oauth.requests.some((r) => r.path === '/revoke'),
      'nothing revoked after Cancel',
    );
    t.equal(await accounts(), 1);

    answer = 'accept';
    await page.click('#disconnect-account');
    await page.waitForSelector('#account [role=status]');
    t.equal(await page.textContent('#account [role=status]'), "Disconnected. Google revoked Airlock's access.");
    t.ok(await page.isVisible('#connect-account'), 'Connect is offered again');
    t.ok(oauth.revoked.includes(refresh), "the emulator revoked the grant's refresh token");
    t.equal(await accounts(), 0, 'Airlock forgot the tokens');
    t.equal(await page.locator('#account [role=alert]').count(), 0, 'no alert when Google confirmed');

    // Google is down at disconnect: Airlock still forgets the tokens and says what to do.
    await connect();
    t.equal(await accounts(), 1, 'connected again');
    const revokedBefore = oauth.revoked.length;
    oauth.options.failRevoke = true;
    await page.click('#disconnect-account');
    await page.waitForSelector('#account [role=alert]');
    const alert = await page.textContent('#account [role=alert]');
    t.match(alert, /Google did not confirm/, 'the alert says Google did not confirm');
    t.match(alert, /myaccount\.google\.com\/permissions/, 'and where to remove Airlock by hand');
    t.equal(oauth.revoked.length, revokedBefore, 'nothing was revoked at the provider');
    t.ok(await page.isVisible('#connect-account'), 'the page shows the account as not connected');
    t.equal(await accounts(), 0, 'Airlock forgot the tokens anyway');
    t.equal(dialogs.length, 3, 'each disconnect asked first');
    await screenshot(page, 'chat-account-revoke-failed');
  });
}
