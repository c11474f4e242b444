/**
 * The approval card shows what the recipient sees (web/ui/src/approval-card.tsx, approval-html.tsx;
 * docs/chat.md#approvals), in a real Chromium against the real chat page, routes, mail gate, proxy,
 * egress gateway and the emulator's Gmail (test/helpers/mail-rig.ts). The agent's send_email has a
 * text part and an HTML part that adds a link to a salary sheet (issue 41): the card shows both
 * parts side by side and the warning that they differ; the HTML is in a sandboxed frame with its
 * link's real target written out and its remote image not loaded (no request leaves the page);
 * To, Cc and Bcc each in a field; the chart with its type and size. Approved, Gmail receives
 * exactly the parts the card showed (read back with mailparser). The screenshot is
 * docs/screenshot-chat-approval-parts.png.
 */
import t from 'tap';
import { simpleParser } from 'mailparser';
import type { Page } from 'playwright-core';
import type { ApprovalPreview } from '../../web/chat-api.js';
import { renderChartPng } from '../../extensions/rasterize.js';
import { normaliseChart } from '../../extensions/chart-spec.js';
import { tempDir } from '../helpers/app.js';
import { axeProblems, browserUnavailable, launch, screenshot, settled } from '../helpers/browser.js';
import { loginAs, startMailRig } from '../helpers/mail-rig.js';

const TEXT = 'Hi, please find the Q2 numbers. Revenue 181, costs 99.';
const HTML =
  '<p>Hi, please find the Q2 numbers. Revenue 181, costs 99.</p>' +
  '<p>Also forwarding our internal salary sheet link: <a href="https://intranet.corp.example/hr/salaries.xlsx">Q2 summary</a></p>' +
  '<p><img src="https://tracker.example/open.png" alt="">Best, Ann</p>';
const text = async (page: Page, sel: string) => ((await page.textContent(sel)) ?? '').trim();

const why = browserUnavailable();
if (why) t.plan(0, why);
else {
  t.test(
    'text and HTML parts that differ: both shown with the warning; approved, Gmail receives exactly what the card showed',
    async (t) => {
      const png = await renderChartPng(
        normaliseChart({
          type: 'bar',
          title: 'Q2 numbers',
          labels: ['Revenue', 'Costs'],
          datasets: [{ label: 'Q2', data: [181, 99] }],
          width: 480,
          height: 280,
        }),
      );
      const rig = await startMailRig(t, tempDir(t), {
        png,
        body: TEXT,
        html: HTML,
        toolInput: true,
        chartTitle: 'Q2 numbers',
      });
      await loginAs(rig.app, 'ann', true);
      const browser = await launch(t);
      const page = await browser.newPage({ viewport: { width: 1280, height: 1100 }, colorScheme: 'light' });
      const requested: string[] = [];
      page.on('request', (r) => requested.push(r.url()));
      await page.goto(rig.app.url + '/#/login');
      await page.fill('#username', 'ann');
      await page.fill('#password', 'ann-password');
      await page.keyboard.press('Enter');
      await page.waitForSelector('#prompt');
      const previewAnswer = page.waitForResponse((r) => /\/approvals\/[^/]+\/preview$/.test(r.url()));
      await page.focus('#prompt');
      await page.keyboard.insertText('Q2 numbers');
      await page.keyboard.press('Enter');
      const shown = (await (await previewAnswer).json()) as ApprovalPreview;

      await page.waitForSelector('.approval[data-state=pending] iframe.approval-html');
      t.match(
        await text(page, '.approval-differ'),
        /plain-text part and the HTML part of this e-mail say different things/,
        'the warning',
      );
      t.equal(await page.getAttribute('.approval-differ', 'role'), 'alert');
      t.equal(await page.textContent('.approval-body'), TEXT, 'the plain-text part, whole');
      t.equal(
        await page.getAttribute('iframe.approval-html', 'sandbox'),
        '',
        'the frame is sandboxed: no scripts, no same origin',
      );
      const frame = page.frames().find((f) => f !== page.mainFrame());
      t.ok(frame, 'the HTML part is in its own frame');
      await frame!.waitForSelector('body');
      const inFrame = ((await frame!.textContent('body')) ?? '').replace(/\s+/g, ' ');
      t.match(
        inFrame,
        /Also forwarding our internal salary sheet link: Q2 summary \[→ https:\/\/intranet\.corp\.example\/hr\/salaries\.xlsx\]/,
        'the HTML part, its link followed by its real target',
      );
      t.match(
        inFrame,
        /\[remote image not loaded: https:\/\/tracker\.example\/open\.png\]/,
        'a remote image named, not loaded',
      );
      t.equal(await frame!.locator('img, script, link').count(), 0, 'nothing in the frame can load');
      t.match(
        await text(page, '.approval-links li'),
        /^Q2 summary → https:\/\/intranet\.corp\.example\/hr\/salaries\.xlsx$/,
        'the link listed under the frame',
      );
      t.same(
        [
          await text(page, '.approval dd.to'),
          await text(page, '.approval dd.cc'),
          await text(page, '.approval dd.bcc'),
        ],
        ['ext@partner.example', 'colleague@corp.example', 'audit@corp.example'],
        'To, Cc and Bcc each in its own field',
      );
      t.match(
        await text(page, '.approval-files li'),
        /^q2-numbers\.png \(image\/png, \d+ KB\)$/,
        'the attachment with name, type and size',
      );
      await page.waitForFunction(() =>
        Array.from(document.querySelectorAll<HTMLImageElement>('.approval-files img')).some(
          (i) => i.complete && i.naturalWidth > 0,
        ),
      );
      t.same(await axeProblems(page), [], 'axe: the card with both parts');
      await page.$eval('.approval', (e) => e.scrollIntoView({ block: 'start' }));
      await settled(page);
      await screenshot(page, 'chat-approval-parts-1280', { fullPage: false });

      await page.click('.approval-actions button:text-is("Approve")');
      await page.waitForSelector('.approval[data-state=approved]');
      await page.waitForSelector('.msg.assistant[data-done]');
      t.equal(
        await page.textContent('.approval[data-state=approved] .approval-body'),
        TEXT,
        'the decided card still shows what was approved',
      );
      t.ok(await page.locator('.approval[data-state=approved] .approval-differ').count(), 'and the warning');
      t.notOk(
        requested.some((u) => !u.startsWith(rig.app.url) && !u.startsWith('about:') && !u.startsWith('data:')),
        'no request left the page (the remote image, the link, remote CSS)',
      );

      const sent = rig.upstream.requests.filter((r) => r.path === '/gmail/v1/users/me/messages/send');
      t.equal(sent.length, 1, 'sent once');
      const mail = await simpleParser(Buffer.from(JSON.parse(sent[0].body).raw, 'base64url'), { keepCidLinks: true });
      t.equal((mail.text ?? '').trim(), shown.text.trim(), "Gmail's text part is the one the card showed");
      t.equal(mail.html, shown.html, "Gmail's HTML part is the one the card showed, byte for byte");
      const addrs = (a: typeof mail.to) =>
        (Array.isArray(a) ? a : a ? [a] : []).flatMap((x) => x.value.map((v) => v.address));
      t.same(
        [addrs(mail.to), addrs(mail.cc), addrs(mail.bcc)],
        [shown.to, shown.cc, shown.bcc],
        'the same recipients in the same fields',
      );
      t.same(
        mail.attachments.map((a) => [a.filename, a.contentType, a.size]),
        shown.attachments.map((a) => [a.name, a.content_type, a.size]),
        'the same attachments',
      );
    },
  );
}
