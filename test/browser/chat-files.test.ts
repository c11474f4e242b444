/**
 * Attaching files in the chat page, in a real browser against the real web app and real
 * workspace folders: the composer's "Attach file" uploads a CSV and a PNG, shows the CSV's first
 * rows as a table and the picture, sends the message naming the files, and the sent message
 * shows them again; a refused file says why. 1280 px light and 390 px dark, axe clean.
 */
import t from 'tap';
import { createLogger, type TurnRequest, type TurnResult, type TurnRunner } from '../../core/index.js';
import { WorkspaceVolumes } from '../../daemon/runtime/workspaces.js';
import { addUser, startTestApp, tempDir } from '../helpers/app.js';
import { axeProblems, browserUnavailable, checkNarrow, launch, screenshot } from '../helpers/browser.js';
import { makePdf } from '../helpers/documents.js';
import { PNG_1PX } from '../helpers/xlsx.js';

const PASSWORD = 'fiona-password-1';

class EchoRunner implements TurnRunner {
  prompts: string[] = [];
  async runTurn(req: TurnRequest): Promise<TurnResult> {
    this.prompts.push(req.prompt);
    req.onEvent({ type: 'text_delta', text: 'I read your file.' });
    return { stop_reason: 'end_turn' };
  }
}

const why = browserUnavailable();
if (why) t.plan(0, why);
else {
  let url = '';
  const runner = new EchoRunner();
  t.before(async () => {
    const dataDir = tempDir(t);
    // Plain folders (quota 0): the quota itself is test/integration/uploads.test.ts's.
    const volumes = new WorkspaceVolumes(dataDir, 0, createLogger({ level: 'error' }));
    volumes.init();
    const app = await startTestApp(t, { dataDir, services: { chat: { runner }, workspaces: volumes } });
    await addUser(app.database, 'fiona', PASSWORD);
    url = app.url;
  });

  for (const [width, scheme] of [
    [1280, 'light'],
    [390, 'dark'],
  ] as const) {
    t.test(`attach a CSV and a PNG, previews, send (${width} px, ${scheme})`, async (t) => {
      const browser = await launch(t);
      const page = await browser.newPage({ viewport: { width, height: 900 }, colorScheme: scheme });
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(url + '/#/login');
      await page.fill('#username', 'fiona');
      await page.fill('#password', PASSWORD);
      await page.keyboard.press('Enter');
      await page.waitForSelector('#attach');
      t.equal(await page.textContent('#attach'), 'Attach file');
      const csv = `month,sales,note\nJan,120,=HYPERLINK("x")\nFeb,135,ok\n`;
      await page.setInputFiles('#attach-input', [
        { name: `sales-${scheme}.csv`, mimeType: 'text/csv', buffer: Buffer.from(csv) },
        { name: `logo-${scheme}.png`, mimeType: 'image/png', buffer: PNG_1PX },
        { name: `notes-${scheme}.md`, mimeType: 'text/markdown', buffer: Buffer.from('# Notes\n<b>not bold</b>\n') },
        { name: `report-${scheme}.pdf`, mimeType: 'application/pdf', buffer: makePdf([['Page one']]) },
      ]);
      t.match(
        await page.getAttribute('#attach-input', 'accept'),
        /\.pdf,.*\.md,\.json/,
        'the picker offers documents too',
      );
      const table = `.composer .file-preview[data-file="sales-${scheme}.csv"] table`;
      await page.waitForSelector(table);
      t.same(
        await page.$$eval(`${table} tr`, (rows) => rows.map((r) => Array.from(r.children, (c) => c.textContent))),
        [
          ['month', 'sales', 'note'],
          ['Jan', '120', '\'=HYPERLINK("x")'],
          ['Feb', '135', 'ok'],
        ],
        'the first rows, a formula shown as text',
      );
      const img = `.composer .file-preview[data-file="logo-${scheme}.png"] img`;
      await page.waitForFunction(
        (sel) => (document.querySelector(sel) as HTMLImageElement | null)?.naturalWidth === 1,
        img,
      );
      t.ok(true, 'the picture is shown from the workspace');
      await page.waitForSelector(`.composer .file-preview[data-file="notes-${scheme}.md"] pre.file-text`);
      t.equal(
        await page.textContent(`.composer .file-preview[data-file="notes-${scheme}.md"] pre.file-text`),
        '# Notes\n<b>not bold</b>\n',
        'a Markdown file: its text, as text',
      );
      t.match(
        await page.textContent(`.composer .file-preview[data-file="report-${scheme}.pdf"]`),
        /PDF document: the agent reads it with read_document/,
        'a PDF: named with its kind',
      );
      t.same(await axeProblems(page), [], 'axe: no serious or critical problem with previews in the composer');
      if (width === 390) await checkNarrow(t, page, `chat-files-${scheme}`, 390);
      await screenshot(page, `chat-files-composer-${width}-${scheme}`, { fullPage: false });

      await page.setInputFiles('#attach-input', [
        { name: 'fake.jpg', mimeType: 'image/jpeg', buffer: Buffer.from('not a jpeg') },
      ]);
      await page.waitForSelector('#composer-hint');
      t.match(await page.textContent('#composer-hint'), /not a JPEG file/, 'a refused file says why');

      await page.fill('#prompt', 'chart my file');
      await page.keyboard.press('Enter');
      await page.waitForSelector('.msg.assistant[data-done]');
      t.match(
        runner.prompts[runner.prompts.length - 1],
        new RegExp(
          `chart my file\\n\\nAttached: uploads/sales-${scheme}\\.csv, uploads/logo-${scheme}\\.png, uploads/notes-${scheme}\\.md, uploads/report-${scheme}\\.pdf$`,
        ),
        'the message names the files',
      );
      t.equal(await page.$$eval('.composer .file-preview', (l) => l.length), 0, 'the composer is cleared');
      await page.waitForSelector(`.msg.user .attached.sent .file-preview[data-file="sales-${scheme}.csv"] table`);
      t.ok(
        await page.$(`.msg.user .attached.sent .file-preview[data-file="logo-${scheme}.png"] img`),
        'the sent message shows its files',
      );
      t.same(await axeProblems(page), [], 'axe: clean with the sent previews');
      await screenshot(page, `chat-files-sent-${width}-${scheme}`, { fullPage: false });
      t.same(errors, []);
    });
  }
}
