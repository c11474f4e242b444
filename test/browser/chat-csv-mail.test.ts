/**
 * An uploaded CSV charted and mailed, end to end in a real Chromium (issue 33, the README's
 * screenshot): the composer uploads sales.csv into the real workspace folder and shows its first
 * rows; the turn reads the file from the workspace, draws it with render_chart (chart.js on the
 * page) and sends the rasterized chart through the real mail path (test/helpers/mail-rig.ts:
 * gate, proxy, egress gateway, fake Google), which holds it for approval. The screenshot shows
 * the three together: the message with its upload preview, the chart and the approval card
 * (docs/screenshot-chat-csv-mail.png). 1280 px light and 390 px dark, axe clean; Approve sends it.
 */
import t from 'tap';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { createLogger } from '../../core/index.js';
import { WorkspaceVolumes } from '../../daemon/runtime/workspaces.js';
import { renderChartPng } from '../../extensions/rasterize.js';
import { normaliseChart } from '../../extensions/chart-spec.js';
import { tempDir } from '../helpers/app.js';
import { axeProblems, browserUnavailable, checkNarrow, launch, screenshot, settled } from '../helpers/browser.js';
import { loginAs, startMailRig } from '../helpers/mail-rig.js';

const CSV = 'month,revenue\nJan,112\nFeb,130\nMar,142\nApr,151\n';
const TITLE = 'Revenue by month (k EUR)';
const BODY =
  'Hello Priya,\n\nHere is the revenue by month from sales.csv, charted: April closed at 151 k EUR.\n\nBest regards,\nAnn';
const text = async (page: Page, sel: string) => ((await page.textContent(sel)) ?? '').trim();

/** The CSV's columns as a bar chart spec: labels from the first column, one dataset from the second. */
function chartOf(csv: string) {
  const rows = csv
    .trim()
    .split('\n')
    .slice(1)
    .map((l) => l.split(','));
  return {
    type: 'bar' as const,
    title: TITLE,
    labels: rows.map((r) => r[0]),
    datasets: [{ label: 'revenue', data: rows.map((r) => Number(r[1])) }],
  };
}

const why = browserUnavailable();
if (why) t.plan(0, why);
else {
  for (const [width, scheme] of [
    [1280, 'light'],
    [390, 'dark'],
  ] as const) {
    t.test(
      `a CSV uploaded, charted and mailed: preview, chart and approval card (${width} px, ${scheme})`,
      async (t) => {
        const dataDir = tempDir(t);
        const volumes = new WorkspaceVolumes(dataDir, 0, createLogger({ level: 'error' }));
        volumes.init();
        const spec = chartOf(CSV);
        const png = await renderChartPng(normaliseChart({ ...spec, width: 600, height: 340 }));
        const readFromWorkspace: string[] = [];
        const rig = await startMailRig(t, dataDir, {
          workspaces: volumes,
          png,
          chartTitle: TITLE,
          body: BODY,
          toolInput: true,
          subject: 'Revenue by month',
          // The turn reads the uploaded file from the user's workspace and draws it.
          async beforeSend(req) {
            const csv = await readFile(join(volumes.ensure(req.userId), 'uploads', 'sales.csv'), 'utf8');
            readFromWorkspace.push(csv);
            const chart = chartOf(csv);
            req.onEvent({
              type: 'tool_start',
              call_id: 'call-0',
              tool: 'render_chart',
              input: { file: 'uploads/sales.csv', type: 'bar', title: TITLE },
            });
            req.onEvent({
              type: 'tool_end',
              call_id: 'call-0',
              tool: 'render_chart',
              ok: true,
              output: JSON.stringify({ chart }),
              duration_ms: 3,
            });
            req.onEvent({
              type: 'text_delta',
              text: 'Here is the chart of sales.csv; the mail to Priya waits for your approval.',
            });
          },
        });
        await loginAs(rig.app, 'ann', true);
        const browser = await launch(t);
        const page = await browser.newPage({
          viewport: { width, height: width === 1280 ? 1500 : 900 },
          colorScheme: scheme,
        });
        const errors: string[] = [];
        page.on('pageerror', (e) => errors.push(e.message));
        await page.goto(rig.app.url + '/#/login');
        await page.fill('#username', 'ann');
        await page.fill('#password', 'ann-password');
        await page.keyboard.press('Enter');
        await page.waitForSelector('#attach');

        await page.setInputFiles('#attach-input', [
          { name: 'sales.csv', mimeType: 'text/csv', buffer: Buffer.from(CSV) },
        ]);
        await page.waitForSelector('.composer .file-preview[data-file="sales.csv"] table');
        await page.fill('#prompt', 'Chart the revenue in my file and mail it to ext@partner.example');
        await page.keyboard.press('Enter');

        await page.waitForSelector('.msg.user .attached.sent .file-preview[data-file="sales.csv"] table');
        await page.waitForSelector('.chart-box canvas');
        await page.waitForSelector('.approval[data-state=pending] .approval-body');
        await page.waitForFunction(
          () =>
            Array.from(document.querySelectorAll<HTMLImageElement>('.approval-files img')).every(
              (i) => i.complete && i.naturalWidth > 0,
            ) && document.querySelectorAll('.approval-files img').length === 1,
        );
        t.same(readFromWorkspace, [CSV], 'the turn read the uploaded file from the workspace');
        t.same(
          await page
            .$$eval('.msg.user .file-preview[data-file="sales.csv"] tr', (rows) =>
              rows.map((r) => Array.from(r.children, (c) => c.textContent)),
            )
            .then((r) => r.slice(0, 2)),
          [
            ['month', 'revenue'],
            ['Jan', '112'],
          ],
          'the upload preview in the message',
        );
        t.equal(await page.getAttribute('.chart-box canvas', 'aria-label'), TITLE, 'the chart, named by its title');
        t.equal(await text(page, '.approval dd.to'), 'ext@partner.example', 'To');
        t.equal(await text(page, '.approval dd.subject'), 'Revenue by month', 'Subject');
        t.match(
          await text(page, '.approval-files li'),
          /^revenue-by-month-k-eur\.png \(image\/png, \d+ KB\)$/,
          'the chart attached by its name',
        );
        t.same(await axeProblems(page), [], `axe: upload, chart and approval (${width} px, ${scheme})`);
        if (width === 390) await checkNarrow(t, page, 'chat-csv-mail-dark');
        else {
          await page.$eval('.approval', (e) => e.scrollIntoView({ block: 'end' }));
          await settled(page);
          await screenshot(page, 'chat-csv-mail-1280', { fullPage: false });
        }

        await page.click('.approval-actions button:text-is("Approve")');
        await page.waitForSelector('.approval[data-state=approved]');
        await page.waitForFunction(() => document.querySelectorAll('.msg.assistant[data-done]').length > 0);
        t.equal(
          rig.upstream.requests.filter((r) => r.path === '/gmail/v1/users/me/messages/send').length,
          1,
          'sent once approved',
        );
        t.same(errors, [], 'no page errors');
      },
    );
  }
}
