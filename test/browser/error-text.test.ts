/**
 * Every error a person can see reads as a sentence, the code only inside a <details>
 * (web/ui/src/error-text.tsx): the chat page with an errored turn (a model that answers 503 until
 * the retries are spent, its retries shown while the turn runs), a tool that timed out, the same
 * chat reloaded from the history; the admin pages with a refused action (a data role created
 * twice) and a turn audit that does not exist. Real chromium, the real chat route, the local
 * runner's agent child and the scripted OpenAI-shaped model on 127.0.0.1.
 */
import t from 'tap';
import type { Page } from 'playwright-core';
import { adminRig, openAdmin } from '../helpers/admin-browser.js';
import { browserUnavailable, launch } from '../helpers/browser.js';
import { FAKE_MCP, startChatHarness } from '../helpers/chat.js';
import { FAULT_AGENT_ENV } from '../helpers/model-faults.js';

/** Text nodes that name an ERR_ code outside any <details> (what a person sees without asking). */
function bareCodes(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const out: string[] = [];
    const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    while (walk.nextNode()) {
      const n = walk.currentNode;
      if (/\bERR_[A-Z0-9_]+/.test(n.textContent ?? '') && !n.parentElement?.closest('details'))
        out.push((n.textContent ?? '').trim().slice(0, 160));
    }
    return out;
  });
}

const skip = browserUnavailable();
if (skip) t.plan(0, skip);
else {
  t.test('chat page: an errored turn, its retries and a timed-out tool read as sentences', async (t) => {
    const h = await startChatHarness(t, {
      childEnv: { ...FAULT_AGENT_ENV, AGENT_TOOL_TIMEOUT_S: '1' },
      mcpServers: [{ name: 'fake', command: process.execPath, args: [FAKE_MCP] }],
    });
    await h.login('erin'); // creates the user
    const browser = await launch(t);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(h.app.url + '/#/login');
    await page.fill('#username', 'erin');
    await page.fill('#password', 'erin-password');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#prompt');

    // A model that answers 503 four times: three retries, each shown while the turn runs, then the end.
    h.model.push({ kind: 'error', status: 503, times: 4 });
    await page.fill('#prompt', 'is the model there');
    await page.click('#send');
    const status = await page.waitForSelector('.turn-status', { timeout: 15_000 });
    t.match(
      await status.textContent(),
      /^The model is not answering, retrying \([123] of 3\)…$/,
      'the retry is shown while the turn runs',
    );
    await page.waitForSelector('.msg.assistant[data-done=error]', { timeout: 30_000 });
    t.equal(await page.locator('.turn-status').count(), 0, 'the notice goes when the turn ends');
    const banner = page.locator('.msg.assistant[data-done=error] .banner.error');
    t.match(
      await banner.locator('.error-sentence').textContent(),
      /^The AI model answered with an error/,
      'a sentence',
    );
    t.equal(await banner.locator('details .errcode').textContent(), 'ERR_MODEL_HTTP', 'the code is in the details');
    t.same(await bareCodes(page), [], 'no bare code after a model error');

    // A tool that hangs: its row says so in words, the code inside the row's details.
    h.model.push(
      { kind: 'reply', tool_calls: [{ name: 'slow', arguments: { ms: 120_000 } }] },
      { kind: 'reply', text: 'The tool did not answer.' },
    );
    await page.fill('#prompt', 'run the slow tool');
    await page.click('#send');
    await page.waitForSelector('.msg.assistant[data-done=end_turn]', { timeout: 30_000 });
    t.equal(
      await page.locator('.tool-error').first().textContent(),
      'The tool did not answer in time and was stopped.',
    );
    t.same(await bareCodes(page), [], 'no bare code after a tool timeout');

    // The same chat from the history.
    await page.reload();
    await page.waitForSelector('.msg.assistant[data-done=end_turn]');
    await page.waitForSelector('.msg.assistant[data-done=error] .error-sentence');
    t.same(await bareCodes(page), [], 'no bare code in the reloaded history');
  });

  t.test('admin pages: a refused action and a failed load read as sentences', async (t) => {
    const { app, page } = await adminRig(t);
    await openAdmin(page, app.url, 'data-roles', '#role-form');
    for (let i = 0; i < 2; i++) {
      await page.fill('#role-name', 'sales_eu');
      await page.click('#role-create');
      if (i === 0)
        await page.waitForFunction(() => /sales_eu/.test(document.querySelector('#roles-table')?.textContent ?? ''));
    }
    await page.waitForSelector('#role-status [role=alert]');
    t.equal(
      await page.locator('#role-status .error-sentence').textContent(),
      'A data role with this name already exists.',
    );
    t.equal(await page.locator('#role-status details .errcode').textContent(), 'ERR_DATA_ROLE_EXISTS');
    t.same(await bareCodes(page), [], 'data roles: no bare code');

    await page.goto(`${app.url}/#/admin/turn/00000000-0000-4000-8000-000000000000`);
    await page.waitForSelector('[role=alert] .error-sentence');
    t.same(await bareCodes(page), [], 'turn audit of a missing turn: no bare code');

    for (const id of ['identity', 'organisations', 'data-assignments', 'action-log', 'sessions']) {
      await openAdmin(page, app.url, id, '#nav');
      await page.waitForLoadState('networkidle');
      t.same(await bareCodes(page), [], `${id}: no bare code`);
    }
  });
}
