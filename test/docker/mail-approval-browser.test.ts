/**
 * Mail approval in a real browser against the real daemon and a real sandbox: the scripted model
 * calls send_email to a recipient outside the allowed domains; the proxy holds the send; the chat
 * page shows the approval card (recipients, subject, attachment names; the body only from the
 * preview route while the send waits, never in the stream or after the decision), it is
 * still there after a reload, and Approve lets the mail arrive in the Google-shaped mailbox. A
 * second send is denied from the page and never arrives; a third is approved "for this recipient
 * in this chat" from the card, and a fourth to the same recipient arrives without a question. The API refuses another user's decision
 * and a second decision; the admin's turn audit page shows the tool call with its upstream
 * request and the held sends, linked from the action log, with no serious or critical axe-core issue.
 */
import t from 'tap';
import type { Page } from 'playwright-core';
import {
  createLogger,
  Encryptor,
  loadOrCreateEncryptionKey,
  hashPassword,
  WORKSPACE_SCOPES,
} from '../../core/index.js';
import { AccountStore } from '../../domain/accounts.js';
import { createUser } from '../../domain/users.js';
import { serve } from '../../daemon/serve.js';
import * as google from '../../emulator/google.js';
import * as openaiModel from '../../emulator/model-openai.js';
import { Client } from '../helpers/client.js';
import { waitFor } from '../helpers/chat.js';
import { axeProblems, browserUnavailable, launch, screenshot } from '../helpers/browser.js';
import { dataDir, dockerOrSkip, ensureTestImage, runtimeConfig, sweep, uniqueOwner } from './helpers.js';

const MODEL_KEY = 'sk-approval-model-key-0123456789abcdef';
const BODY = 'the secret body text of the quarterly mail';

const why = browserUnavailable();
const docker = why ? null : await dockerOrSkip(t);
if (why) t.plan(0, why);
else if (docker) {
  const image = await ensureTestImage(docker);

  async function login(page: Page, url: string, username: string): Promise<void> {
    await page.goto(url + '/#/login');
    await page.fill('#username', username);
    await page.fill('#password', `${username}-password`);
    await page.keyboard.press('Enter');
    await page.waitForSelector('#prompt');
  }

  t.test('an "ask" send waits for the user in the chat: approved arrives, denied does not', async (t) => {
    const g = await google.start({ userEmail: 'dana@corp.example' });
    t.teardown(() => g.close());
    const send = (to: string, subject: string) => ({
      kind: 'reply' as const,
      tool_calls: [{ name: 'send_email', arguments: { to: [to], subject, text: BODY } }],
    });
    const model = await openaiModel.start({
      apiKey: MODEL_KEY,
      script: [
        send('partner@partner.example', 'Quarterly numbers'),
        { kind: 'reply', text: 'Sent.' },
        send('other@partner.example', 'Second try'),
        { kind: 'reply', text: 'Not sent.' },
        send('other@partner.example', 'Third try'),
        { kind: 'reply', text: 'Sent this time.' },
        send('other@partner.example', 'Follow-up'),
        { kind: 'reply', text: 'Sent without asking.' },
      ],
    });
    t.teardown(() => model.close());
    const dir = dataDir(t);
    const owner = uniqueOwner('approval');
    t.teardown(() => sweep(docker!, owner));
    const config = runtimeConfig(dir, image, {
      AIRLOCK_PORT: '0',
      AIRLOCK_POOL_SIZE: '0',
      AGENT_USER_TOKEN_SECRET: 'approval-agent-user-token-secret-0',
      MCP_INTERNAL_SECRET: 'approval-mcp-internal-secret-012345',
      AIRLOCK_MODEL_PROVIDER: 'openai',
      AIRLOCK_MODEL: 'gpt-approval',
      AIRLOCK_MODEL_BASE_URL: model.url,
      AIRLOCK_MODEL_API_KEY: MODEL_KEY,
      AIRLOCK_GOOGLE_MAIL_BASE_URL: g.url,
      AIRLOCK_GOOGLE_SHEETS_BASE_URL: g.url,
      AIRLOCK_GOOGLE_DRIVE_BASE_URL: g.url,
      AIRLOCK_MAIL_ALLOW_DOMAINS: 'corp.example',
      AIRLOCK_MAIL_OTHER: 'ask',
      AIRLOCK_MAIL_APPROVAL_TIMEOUT_S: '60',
    });
    const d = await serve(config, { log: createLogger({ level: 'silent' }), runtime: { owner } });
    t.teardown(async () => {
      await d.runtime?.close({ removeContainers: true });
      await d.close();
    });
    const dana = await createUser(d.database.sql, {
      username: 'dana',
      email: 'dana@corp.example',
      passwordHash: await hashPassword('dana-password'),
    });
    await createUser(d.database.sql, {
      username: 'eve',
      email: 'eve@corp.example',
      passwordHash: await hashPassword('eve-password'),
    });
    await createUser(d.database.sql, {
      username: 'root',
      email: 'root@corp.example',
      passwordHash: await hashPassword('root-password'),
      isSuperuser: true,
    });
    await new AccountStore(d.database.sql, new Encryptor(loadOrCreateEncryptionKey(dir, config.encryptionKey))).connect(
      dana.id,
      {
        email: 'dana@corp.example',
        scopes: [...WORKSPACE_SCOPES],
        accessToken: g.token,
        expiresAt: Date.now() + 3600_000,
      },
    );

    const browser = await launch(t);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await login(page, d.web.url, 'dana');
    await page.fill('#prompt', 'mail the quarterly numbers to partner@partner.example');
    await page.click('#send');
    const card = await page.waitForSelector('.approval[data-state=pending]', { timeout: 120_000 });
    const text = (await card.textContent()) ?? '';
    t.match(text, /partner@partner\.example/, 'the card names the recipient');
    t.match(text, /Quarterly numbers/, 'and the subject');
    // The body comes from the preview route, for the owner, while the send waits (docs/chat.md#approvals).
    await page.waitForSelector('.approval[data-state=pending] .approval-body', { timeout: 30_000 });
    t.match(
      await page.textContent('.approval-body'),
      /secret body text/,
      'the body from the preview route while it waits',
    );
    t.equal(g.mailbox.length, 0, 'nothing sent while it waits');
    t.same(await axeProblems(page), [], 'axe: no serious or critical issue with the approval card');
    await screenshot(page, 'chat-approval');

    // A reload shows the pending question again (the resumable stream).
    await page.reload();
    await page.waitForSelector('.approval[data-state=pending]', { timeout: 60_000 });
    const approvalId = (await page.getAttribute('.approval[data-state=pending]', 'data-approval'))!;
    const sessionId = (await page.evaluate(() => location.hash.split('/')[2])) ?? '';

    // Another user may not decide it; the owner's API needs its CSRF token like every POST.
    const eve = new Client(d.web.url);
    t.equal((await eve.login('eve', 'eve-password')).status, 200);
    const byEve = await eve.json('POST', `/api/chat/sessions/${sessionId}/approvals/${approvalId}`, {
      decision: 'approve',
    });
    t.equal(byEve.status, 404, `another user gets 404 (${JSON.stringify(byEve.body)})`);
    const danaApi = new Client(d.web.url);
    await danaApi.login('dana', 'dana-password');
    const noCsrf = await fetch(`${d.web.url}/api/chat/sessions/${sessionId}/approvals/${approvalId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie: danaApi.cookieHeader() },
      body: JSON.stringify({ decision: 'approve' }),
    });
    t.equal(noCsrf.status, 403, 'no CSRF token: refused');
    const bad = await danaApi.json('POST', `/api/chat/sessions/${sessionId}/approvals/${approvalId}`, {
      decision: 'maybe',
    });
    t.equal(bad.status, 400, 'a decision must be approve or deny');
    t.equal(g.mailbox.length, 0, 'still nothing sent');

    await page.click('.approval[data-state=pending] button:has-text("Approve")');
    await page.waitForSelector('.approval[data-state=approved]', { timeout: 60_000 });
    await page.waitForSelector('[data-done]', { timeout: 120_000 });
    t.match(
      await page.textContent('.approval[data-state=approved] .approval-body'),
      /secret body text/,
      'decided: the card keeps the message it showed until a reload',
    );
    await waitFor(() => g.mailbox.length === 1, 'the approved mail arrives');
    t.same(g.mailbox[0].to, ['partner@partner.example'], 'to the approved recipient');
    t.equal(await page.getAttribute('.tool[data-tool=send_email]', 'data-status'), 'ok', 'send_email succeeded');
    const again = await danaApi.json('POST', `/api/chat/sessions/${sessionId}/approvals/${approvalId}`, {
      decision: 'deny',
    });
    t.equal(again.status, 409, 'a decided send cannot be decided again');

    // The second send is denied from the page: it never arrives, and the model is told.
    await page.fill('#prompt', 'now mail other@partner.example');
    await page.click('#send');
    await page.waitForSelector('.approval[data-state=pending]', { timeout: 120_000 });
    await page.click('.approval[data-state=pending] button:has-text("Deny")');
    await page.waitForSelector('.approval[data-state=denied]', { timeout: 60_000 });
    await page.waitForFunction(() => document.querySelectorAll('[data-done]').length === 2, undefined, {
      timeout: 120_000,
    });
    t.equal(
      await page.getAttribute('.msg.assistant:last-of-type .tool[data-tool=send_email]', 'data-status'),
      'failed',
      'send_email failed',
    );
    t.match(
      (await page.textContent('.msg.assistant:last-of-type .tool[data-tool=send_email]')) ?? '',
      /ERR_MAIL_DENIED/,
      'with the denial code',
    );
    t.equal(g.mailbox.length, 1, 'the denied mail never arrived');

    // "Approve for this recipient in this chat": the next send to the same recipient is not asked about.
    await page.fill('#prompt', 'try other@partner.example again');
    await page.click('#send');
    await page.waitForSelector('.approval[data-state=pending]', { timeout: 120_000 });
    await page.click('.approval[data-state=pending] button:has-text("Approve for this recipient in this chat")');
    const forRecipient = await page.waitForSelector('.approval[data-state=approved]:has-text("Third try")', {
      timeout: 60_000,
    });
    t.match(
      (await forRecipient.textContent()) ?? '',
      /for these recipients in this chat/,
      'the card says the approval holds for the recipient',
    );
    await page.waitForFunction(() => document.querySelectorAll('[data-done]').length === 3, undefined, {
      timeout: 120_000,
    });
    await waitFor(() => g.mailbox.length === 2, 'the mail approved for the recipient arrives');
    await page.fill('#prompt', 'and a follow-up to other@partner.example');
    await page.click('#send');
    await page.waitForFunction(() => document.querySelectorAll('[data-done]').length === 4, undefined, {
      timeout: 120_000,
    });
    t.equal(
      await page.locator('.msg.assistant:last-of-type .approval').count(),
      0,
      'no approval card for the same recipient',
    );
    await waitFor(() => g.mailbox.length === 3, 'the follow-up arrives without a question');
    t.same(g.mailbox[2].to, ['other@partner.example']);

    // The admin's turn audit, linked from the action log.
    const admin = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await login(admin, d.web.url, 'root');
    await admin.goto(`${d.web.url}/#/admin/action-log`);
    const link = await admin.waitForSelector('a.turn-link', { timeout: 30_000 });
    await link.click();
    await admin.waitForSelector('h1, h2');
    await admin.waitForFunction(
      () => document.body.textContent?.includes('Mail sends held for the send policy'),
      undefined,
      { timeout: 30_000 },
    );
    const page2 = (await admin.textContent('main')) ?? '';
    t.match(page2, /Tool call send_email/, 'the audit page shows the tool call');
    t.match(
      page2,
      /POST \/gmail\/mail\/v1\/users\/me\/messages\/send/,
      'with its upstream request (the path template)',
    );
    t.notMatch(page2, /secret body text/, 'and never the body');
    t.same(await axeProblems(admin), [], 'axe: no serious or critical issue on the turn audit page (light)');
    await admin.emulateMedia({ colorScheme: 'dark' });
    t.same(await axeProblems(admin), [], 'axe: the turn audit page (dark)');
  });
}
