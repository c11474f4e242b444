/**
 * run_python's card in a real browser (docs/chat.md#run_python-in-the-chat): the code run is shown
 * collapsible, monospace and escaped; a failure shows its traceback; a long cell starts folded;
 * the same after a reload (from the stored transcript). The turn runner is scripted (the daemon's
 * side of the interface); everything from the route to the DOM is the real code.
 */
import t from 'tap';
import type { TurnRequest, TurnResult, TurnRunner } from '../../core/index.js';
import { addUser, startTestApp } from '../helpers/app.js';
import { axeProblems, signInToChat, browserUnavailable, launch, screenshot } from '../helpers/browser.js';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { PNG_1PX } from '../helpers/xlsx.js';

t.setTimeout(240_000);

const PASSWORD = 'pia-password-1';
const HOSTILE_CODE = 'label = "<img src=x onerror=window.__pwned=1>"\nprint(label)\n1 / 0';
const TRACEBACK =
  'stdout:\n<img src=x onerror=window.__pwned=1>\nTraceback (most recent call last):\n  File "<cell>", line 3, in <module>\nZeroDivisionError: division by zero';
const LONG_CODE = Array.from({ length: 30 }, (_, i) => `x${i} = ${i} * 2`).join('\n');

/** py-fail: a cell raising; py-long: a 30-line cell printing. */
class PythonRunner implements TurnRunner {
  async runTurn(req: TurnRequest): Promise<TurnResult> {
    const code = req.prompt === 'py-fail' ? HOSTILE_CODE : LONG_CODE;
    req.onEvent({ type: 'tool_start', call_id: 'p1', tool: 'run_python', input: { code } });
    if (req.prompt === 'py-fail')
      req.onEvent({
        type: 'tool_end',
        call_id: 'p1',
        tool: 'run_python',
        ok: false,
        error: `${TRACEBACK} (ERR_PYTHON_EXCEPTION)`,
        duration_ms: 12,
      });
    else {
      const output = JSON.stringify({
        stdout: 'x29 = 58\n',
        stderr: '',
        truncated: false,
        files: [],
        new_interpreter: false,
        duration_ms: 3,
      });
      req.onEvent({ type: 'tool_end', call_id: 'p1', tool: 'run_python', ok: true, output, duration_ms: 3 });
    }
    req.onEvent({ type: 'text_delta', text: 'Done.' });
    return { stop_reason: 'end_turn' };
  }
}

const why = browserUnavailable();
if (why) t.plan(0, why);
else {
  t.test('run_python card: code, traceback, folding, escaping, after reload', async (t) => {
    const app = await startTestApp(t, { services: { chat: { runner: new PythonRunner() } } });
    await addUser(app.database, 'pia', PASSWORD);
    const page = await (await launch(t)).newPage();
    await signInToChat(page, app.url, 'pia', PASSWORD);
    const ask = async (text: string, n: number) => {
      await page.fill('#prompt', text);
      await page.keyboard.press('Enter');
      await page.waitForFunction((k) => document.querySelectorAll('.msg.assistant[data-done]').length === k, n, {
        timeout: 15_000,
      });
    };
    /** What the cards show, in order. */
    const cards = () =>
      page.$$eval('.py', (els) =>
        els.map((el) => {
          const pre = el.querySelector('.py-code pre') as HTMLElement;
          return {
            code: pre.textContent,
            open: (el.querySelector('.py-code') as HTMLDetailsElement).open,
            visible: pre.getBoundingClientRect().height > 0,
            font: getComputedStyle(pre).fontFamily,
            traceback: el.querySelector('.py-traceback')?.textContent ?? null,
            stdout: el.querySelector('.py-stdout')?.textContent ?? null,
            injected: el.querySelectorAll('img').length,
          };
        }),
      );
    const check = async (when: string) => {
      const [fail, long] = await cards();
      t.equal(fail?.code, HOSTILE_CODE, `${when}: the failed cell's code, as text`);
      t.ok(fail?.open && fail.visible, `${when}: a short cell is shown open`);
      t.match(fail?.font, /mono|Menlo|Consolas/i, `${when}: monospace`);
      t.equal(fail?.traceback, TRACEBACK, `${when}: the traceback without its code`);
      t.equal(fail?.injected, 0, `${when}: markup in code and traceback stays text`);
      t.notOk(fail?.traceback?.includes('ERR_'), `${when}: no bare error code in the traceback`);
      t.equal(long?.code, LONG_CODE, `${when}: the long cell's code`);
      t.notOk(long?.open, `${when}: a 30-line cell starts folded`);
      t.equal(long?.traceback, null, `${when}: no traceback on success`);
      t.equal(long?.stdout, 'x29 = 58\n', `${when}: the printed output`);
      t.equal(
        await page.evaluate(() => (window as { __pwned?: unknown }).__pwned),
        undefined,
        `${when}: no script ran`,
      );
      t.match(
        await page.textContent('.tool-error'),
        /traceback is shown with the code/,
        `${when}: the sentence names the traceback`,
      );
    };
    await ask('py-fail', 1);
    await ask('py-long', 2);
    await check('live');
    const longSummary = (await page.$$('.py-code summary'))[1];
    await longSummary?.click();
    t.ok(await page.$$eval('.py-code', (els) => (els[1] as HTMLDetailsElement).open), 'a click unfolds the long cell');
    t.same(await axeProblems(page), [], 'axe: no violations on the cards');
    await page.reload();
    await page.waitForFunction(() => document.querySelectorAll('.py').length === 2, undefined, { timeout: 15_000 });
    await check('after reload');
  });

  t.test("run_python's files in the chat: the image shown, every file downloadable, after a reload too", async (t) => {
    const png = `${randomUUID()}.png`;
    const svg = `${randomUUID()}.svg`;
    const csv = `${randomUUID()}.csv`;
    const holder: { dataDir?: string } = {};
    const runner: TurnRunner = {
      async runTurn(req) {
        // What keepOutFiles leaves in the user's workspace (tools/attachments.ts), then the call's result.
        const dir = join(holder.dataDir!, 'workspaces', String(req.userId), '.agent-attachments');
        mkdirSync(dir, { recursive: true });
        writeFileSync(join(dir, png), PNG_1PX);
        writeFileSync(
          join(dir, svg),
          '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>parent.__pwned=1</script><rect width="10" height="10"/></svg>',
        );
        writeFileSync(join(dir, csv), 'region,growth\nNorth,3\n');
        const attachments = [
          { name: png, path: 'out/chart.png', size: PNG_1PX.length },
          { name: svg, path: 'out/shape.svg', size: 120 },
          { name: csv, path: 'out/data.csv', size: 21 },
        ];
        req.onEvent({
          type: 'tool_start',
          call_id: 'p1',
          tool: 'run_python',
          input: { code: 'plt.savefig("out/chart.png")' },
        });
        req.onEvent({
          type: 'tool_end',
          call_id: 'p1',
          tool: 'run_python',
          ok: true,
          output: JSON.stringify({
            stdout: '',
            stderr: '',
            truncated: false,
            files: [],
            attachments,
            new_interpreter: false,
            duration_ms: 3,
          }),
          duration_ms: 3,
        });
        req.onEvent({ type: 'text_delta', text: 'Here they are.' });
        return { stop_reason: 'end_turn' };
      },
    };
    const app = await startTestApp(t, { services: { chat: { runner } } });
    holder.dataDir = app.config.dataDir;
    await addUser(app.database, 'pia', PASSWORD);
    const page = await (await launch(t)).newPage();
    await signInToChat(page, app.url, 'pia', PASSWORD);
    await page.fill('#prompt', 'chart it');
    await page.keyboard.press('Enter');
    const shown = async (when: string) => {
      await page.waitForSelector('.py-files li[data-file="out/data.csv"]', { timeout: 15_000 });
      await page.waitForFunction(() =>
        Array.from(document.querySelectorAll<HTMLImageElement>('.py-files img')).every(
          (i) => i.complete && i.naturalWidth > 0,
        ),
      );
      const items = await page.$$eval('.py-files li', (lis) =>
        lis.map((li) => ({
          file: li.getAttribute('data-file'),
          img: li.querySelector('img')?.getAttribute('alt') ?? null,
          download: li.querySelector('a.py-download')?.getAttribute('download'),
          href: li.querySelector('a.py-download')?.getAttribute('href'),
        })),
      );
      t.same(
        items,
        [
          {
            file: 'out/chart.png',
            img: 'out/chart.png, written by the code',
            download: 'chart.png',
            href: `/api/chat/attachments/${png}`,
          },
          {
            file: 'out/shape.svg',
            img: 'out/shape.svg, written by the code',
            download: 'shape.svg',
            href: `/api/chat/attachments/${svg}`,
          },
          { file: 'out/data.csv', img: null, download: 'data.csv', href: `/api/chat/attachments/${csv}` },
        ],
        `${when}: the images shown, every file with its Download`,
      );
      t.equal(
        await page.evaluate(() => (window as { __pwned?: unknown }).__pwned),
        undefined,
        `${when}: the SVG's script did not run`,
      );
    };
    await shown('live');
    // A file that is not an image has a preview on request: its first rows, as the upload's.
    t.equal(await page.$$eval('.py-files li img ~ details.py-preview', (d) => d.length), 0, 'no preview for an image');
    await page.click('.py-files li[data-file="out/data.csv"] details.py-preview > summary');
    await page.waitForSelector('.py-files li[data-file="out/data.csv"] .py-preview table.file-table td', {
      timeout: 15_000,
    });
    t.same(
      await page.$$eval('.py-files li[data-file="out/data.csv"] .py-preview tr', (rows) =>
        rows.map((r) => Array.from(r.children).map((c) => c.textContent)),
      ),
      [
        ['region', 'growth'],
        ['North', '3'],
      ],
      "the CSV's preview: its rows",
    );
    t.same(await axeProblems(page), [], 'axe: the files, a preview open');
    await screenshot(page, 'chat-python-files', { fullPage: false });
    const download = page.waitForEvent('download');
    await page.click('.py-files li[data-file="out/data.csv"] a.py-download');
    const file = await download;
    t.equal(file.suggestedFilename(), 'data.csv', 'the download is named after the file the code wrote');
    await page.reload();
    await shown('after reload');
  });
}
