/**
 * `airlock demo` as a newcomer runs it (the CLI as a child process, default pool): the banner,
 * then in a browser: log in as the demo user, ask for a chart of the sample spreadsheet mailed to
 * someone, approve it on the approval card (the default send policy asks about any domain not
 * allowed), and read that mail with its inline chart at the mailbox the banner prints; then
 * Ctrl-C (SIGINT): exit 0 and no container of the demo left running (its emulators stop with it,
 * so nothing is kept for adoption). The image it is told to
 * use does not exist yet, as on a newcomer's first start: the demo builds it, with progress lines
 * (the debootstrap base is cached by `.ci/run`'s `airlock image build`, so this takes seconds).
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LABEL_OWNER } from '../../daemon/runtime/session-manager.js';
import { waitFor } from '../helpers/chat.js';
import { browserUnavailable, launch, screenshot } from '../helpers/browser.js';
import { Client } from '../helpers/client.js';
import { dataDir, dockerOrSkip, ensureTestImage, ROOT, sweep, ENGINE_ENV } from './helpers.js';

const why = browserUnavailable();
const docker = why ? null : await dockerOrSkip(t as unknown as Parameters<typeof dockerOrSkip>[0]);
if (why) t.plan(0, why);
else if (docker) {
  // The test image's base layers are built once; the demo then builds its own tag from them.
  await ensureTestImage(docker);

  t.test(
    'airlock demo through the CLI: banner, a mailed chart read in the printed mailbox, Ctrl-C removes its sandboxes',
    async (t) => {
      const dir = dataDir(t);
      const image = `airlock/sandbox:demo-cli-${randomBytes(4).toString('hex')}`;
      t.teardown(() =>
        docker
          .getImage(image)
          .remove({ force: true })
          .catch(() => undefined),
      );
      const child = spawn(process.execPath, [join(ROOT, 'dist', 'daemon', 'main.js'), 'demo'], {
        env: {
          PATH: process.env.PATH ?? '',
          AIRLOCK_DATA_DIR: dir,
          AIRLOCK_PORT: '0',
          AIRLOCK_IMAGE: image,
          ...ENGINE_ENV,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      const exited = new Promise<number | null>((r) => child.on('close', r));
      t.teardown(() => {
        if (child.exitCode === null) child.kill('SIGKILL');
      });
      await waitFor(
        () => out.includes('Ctrl-C stops everything') || child.exitCode !== null,
        'the demo banner',
        300_000,
      );
      t.equal(child.exitCode, null, `the demo runs (${out.slice(-300)})`);
      t.match(out, `Building the sandbox image ${image}`, 'the missing image is built on first start');
      t.match(out, /✓ image built in \d+s/, 'with progress to its end');
      t.ok(
        await docker
          .getImage(image)
          .inspect()
          .then(
            () => true,
            () => false,
          ),
        'the image now exists',
      );
      const url = /Open {2,}(http:\/\/\S+)\//.exec(out)?.[1];
      const login = /Log in as {2,}(\S+) \/ (\S+)/.exec(out);
      const mailboxUrl = /Read it at {2,}(http:\/\/\S+)/.exec(out)?.[1];
      t.ok(url && login && mailboxUrl, 'the banner shows the URL, the demo login and the mailbox');
      const owner = readFileSync(join(dir, 'runtime-owner'), 'utf8').trim();
      t.teardown(() => sweep(docker, owner));

      const c = new Client(url!);
      t.equal((await c.login(login![1], login![2])).status, 200, 'the printed password works');

      // The newcomer's path in a browser: the login page, the suggested prompt, the tool rows.
      const browser = await launch(t);
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      await page.goto(url + '/');
      await page.fill('#username', login![1]);
      await page.fill('#password', login![2]);
      await page.keyboard.press('Enter');
      await page.waitForSelector('#prompt');
      // The model line is filled in after the page renders.
      await page.waitForSelector('#model[data-demo="true"]');
      t.match(await page.textContent('#model'), /Demo model/, 'the page says the model is the offline demo');
      await page.fill('#prompt', 'chart the sample spreadsheet and email it to someone@example.com');
      await page.click('#send');
      // The default send policy asks about someone@example.com: the approval card, approved once.
      await page.waitForSelector('.approval[data-state=pending]', { timeout: 180_000 });
      t.match(
        await page.textContent('.approval[data-state=pending]'),
        /someone@example\.com/,
        'the approval card names the recipient',
      );
      await screenshot(page, 'demo-approval');
      await page.click('.approval[data-state=pending] button:has-text("Approve")');
      await page.waitForSelector('.approval[data-state=approved]', { timeout: 60_000 });
      await page.waitForSelector('[data-done]', { timeout: 180_000 });
      t.equal(await page.getAttribute('[data-done]', 'data-done'), 'end_turn');
      const rows = await page.$$eval('.tool', (els) =>
        els.map((e) => [(e as HTMLElement).dataset.tool, (e as HTMLElement).dataset.status]),
      );
      t.same(
        rows,
        [
          ['search_spreadsheets', 'ok'],
          ['fetch_sheet', 'ok'],
          ['rasterize_chart', 'ok'],
          ['send_email', 'ok'],
        ],
        'search, fetch, chart, mail',
      );
      await page.waitForFunction(() => {
        const img = document.querySelector('img.attachment') as HTMLImageElement | null;
        return !!img && img.complete && img.naturalWidth > 0;
      });
      t.equal(
        await page.$eval('img.attachment', (i) => (i as HTMLImageElement).naturalWidth),
        800,
        'the chart (an 800 px PNG) is shown in the chat',
      );
      await screenshot(page, 'demo-chat');

      // The recipient's view, at the mailbox the banner printed: the mail with its chart inline.
      const box = (await fetch(`${mailboxUrl}.json`).then((res) => res.json())) as { messages: any[] };
      const mail = box.messages.find((m) => m.to.includes('someone@example.com'));
      t.ok(mail, 'the mail to someone@example.com is in the mailbox');
      const png = mail?.attachments.find((a: any) => a.contentType === 'image/png');
      t.ok(png, 'it carries a PNG');
      t.ok(png?.cid || png?.contentId, 'the PNG is an inline part (Content-ID)');
      t.match(mail?.html ?? '', /cid:/, 'the HTML body shows it inline');
      t.ok(png?.size > 200, 'the chart has content');
      await page.goto(mailboxUrl!);
      t.match(await page.textContent('body'), 'someone@example.com', 'the mailbox page lists it');
      await page.click(`a[href="/mailbox/${mail?.id}"]`);
      await page.waitForLoadState('load');
      // The mail's HTML is shown in a sandboxed frame (no scripts, no same origin).
      const frame = page.frames().find((f) => f !== page.mainFrame());
      t.ok(frame, 'the message body is in its frame');
      await frame!.waitForSelector('img[src^="data:image/png;base64,"]');
      const img = await frame!.$eval('img[src^="data:image/png;base64,"]', (i) => {
        const el = i as HTMLImageElement;
        return { w: el.naturalWidth, h: el.naturalHeight };
      });
      t.ok(img.w > 100 && img.h > 100, `the inline chart decodes in the browser (${img.w}x${img.h})`);
      await screenshot(page, 'demo-mailbox');

      const ours = async () =>
        (await docker.listContainers({ all: true, filters: { label: [`${LABEL_OWNER}=${owner}`] } })).length;
      t.ok((await ours()) >= 1, 'a sandbox runs for the session');
      const images = (await docker.listContainers({ all: true, filters: { label: [`${LABEL_OWNER}=${owner}`] } })).map(
        (c) => c.Image,
      );
      t.same([...new Set(images)], [image], 'its sandboxes run the image the demo built');

      child.kill('SIGINT');
      t.equal(await exited, 0, 'Ctrl-C: exit 0');
      t.match(out, /SIGINT: stopping the demo/);
      t.equal(await ours(), 0, 'no container of the demo is left');
    },
  );
}
