import t from 'tap';
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { start as startGoogle } from '../../emulator/google.js';
import { normaliseChart, renderChartPng } from '../../extensions/index.js';
import { buildMessage } from '../../tools/index.js';

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));

// Skipped only outside CI when no chromium is installed; in CI a missing browser fails.
const skip = !CHROMIUM && process.env.CI !== 'true' ? 'no chromium on this machine (apt-get install chromium)' : false;

t.test('the mailbox page shows the HTML body with cid: images resolved, scripts inert', { skip }, async (t) => {
  if (!CHROMIUM) {
    t.fail('chromium is required in CI (.ci/run installs it)');
    return;
  }
  const g = await startGoogle({ acceptTokens: ['tok'] });
  t.teardown(() => g.close());
  const png = await renderChartPng(
    normaliseChart({ type: 'bar', labels: ['a', 'b'], datasets: [{ data: [1, 2] }], width: 320, height: 200 }),
  );
  const name = '0b9e0a3e-4c1f-4b7e-9a51-0f3b5a8d2c11.png';
  const raw = await buildMessage(
    {
      to: ['bob@example.test'],
      subject: 'Weekly <chart>',
      html: `<h2 id="hello">Hello</h2><img id="chart" src="cid:${name}"><script>document.title='pwned'</script>`,
    },
    [{ filename: name, content: png }],
    'alice@example.test',
  );
  const sent = await fetch(`${g.url}/gmail/v1/users/me/messages/send`, {
    method: 'POST',
    headers: { authorization: 'Bearer tok', 'content-type': 'application/json' },
    body: JSON.stringify({ raw: raw.toString('base64url') }),
  });
  const { id } = (await sent.json()) as { id: string };

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  t.teardown(() => browser.close());
  const page = await browser.newPage();
  await page.goto(`${g.url}/mailbox`);
  t.match(await page.textContent('body'), 'Weekly <chart>', 'listed, subject escaped');
  await page.click(`a[href="/mailbox/${id}"]`);
  await page.waitForLoadState('load');
  const frame = page.frames().find((f) => f !== page.mainFrame());
  t.ok(frame, 'message body in a frame');
  await frame!.waitForSelector('#chart');
  const img = await frame!.evaluate(() => {
    const el = document.getElementById('chart') as HTMLImageElement;
    return {
      w: el.naturalWidth,
      h: el.naturalHeight,
      src: el.src.slice(0, 22),
      text: document.getElementById('hello')?.textContent,
      title: document.title,
    };
  });
  // (Playwright evaluates in its own isolated world, which works even in a script-less sandboxed frame.)
  t.same([img.w, img.h], [320, 200], 'inline chart decoded from the resolved data: URI');
  t.equal(img.src, 'data:image/png;base64,');
  t.equal(img.text, 'Hello');
  t.not(img.title, 'pwned', 'the message script did not run');
  t.not(await page.title(), 'pwned');
});
