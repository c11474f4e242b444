/**
 * Files run_python wrote under out/ mailed through the approval card (docs/tools.md#send_email):
 * the message send_email builds (tools/mime.ts) with a chart, a CSV, an XLSX and a hostile SVG
 * goes through the real mail gate and routes to the card in a real Chromium. The card lists every
 * file by name, type and size; the SVG gets no thumbnail and runs nothing; approved, Gmail
 * receives the same files with the same types (read back with mailparser).
 */
import t from 'tap';
import { simpleParser } from 'mailparser';
import { OUT_TYPES } from '../../tools/attachments.js';
import { tempDir } from '../helpers/app.js';
import { browserUnavailable, launch } from '../helpers/browser.js';
import { loginAs, startMailRig } from '../helpers/mail-rig.js';

const CSV = Buffer.from('region,growth\nnorth,0.12\nsouth,0.07\n');
const XLSX = Buffer.concat([Buffer.from([0x50, 0x4b, 0x03, 0x04]), Buffer.alloc(200, 7)]);
const SVG = Buffer.from(
  '<svg xmlns="http://www.w3.org/2000/svg" onload="window.__pwned=1"><script>window.__pwned=2</script><rect width="10" height="10"/></svg>',
);
const file = (name: string, content: Buffer) => ({
  filename: `out-${name}`,
  name,
  content,
  type: OUT_TYPES[name.split('.').pop()!],
});

const why = browserUnavailable();
if (why) t.plan(0, why);
else {
  t.test('CSV, XLSX and SVG from out/: listed on the card, sent as approved', async (t) => {
    const files = [file('growth.csv', CSV), file('growth.xlsx', XLSX), file('growth.svg', SVG)];
    const rig = await startMailRig(t, tempDir(t), { files, toolInput: true, chartTitle: 'Growth' });
    await loginAs(rig.app, 'ann', true);
    const page = await (await launch(t)).newPage();
    await page.goto(rig.app.url + '/#/login');
    await page.fill('#username', 'ann');
    await page.fill('#password', 'ann-password');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#prompt');
    await page.fill('#prompt', 'Growth files');
    await page.keyboard.press('Enter');
    await page.waitForSelector('.approval[data-state=pending] .approval-files li:nth-child(4)');
    const items = await page.$$eval('.approval-files li', (els) =>
      els.map((e) => ({
        name: e.getAttribute('data-attachment-name'),
        text: (e.textContent ?? '').trim(),
        img: e.querySelectorAll('img').length,
      })),
    );
    t.same(
      items.map((i) => i.name),
      ['growth.png', 'growth.csv', 'growth.xlsx', 'growth.svg'],
      'every file listed by its name',
    );
    t.match(items[1]?.text, /^growth\.csv \(text\/csv[^)]*, \d+ (B|bytes|KB)\)$/, 'the CSV with its type and size');
    t.match(
      items[2]?.text,
      /application\/vnd\.openxmlformats-officedocument\.spreadsheetml\.sheet/,
      'the XLSX with its type',
    );
    t.match(items[3]?.text, /image\/svg\+xml/, 'the SVG with its type');
    t.equal(items[3]?.img, 0, 'no thumbnail for the SVG');
    t.equal(
      await page.evaluate(() => (window as { __pwned?: unknown }).__pwned),
      undefined,
      "the SVG's script never ran",
    );

    await page.click('.approval-actions button:text-is("Approve")');
    await page.waitForSelector('.approval[data-state=approved]');
    const sent = rig.upstream.requests.filter((r) => r.path === '/gmail/v1/users/me/messages/send');
    t.equal(sent.length, 1, 'sent once');
    const mail = await simpleParser(Buffer.from(JSON.parse(sent[0].body).raw, 'base64url'), { keepCidLinks: true });
    t.same(
      mail.attachments.map((a) => [a.filename, a.contentType, a.contentDisposition]),
      [
        ['growth.png', 'image/png', 'inline'],
        ['growth.csv', 'text/csv', 'attachment'],
        ['growth.xlsx', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', 'attachment'],
        ['growth.svg', 'image/svg+xml', 'attachment'],
      ],
      'Gmail receives the files with their types',
    );
    t.ok(mail.attachments[3]?.content.equals(SVG), 'the SVG bytes unchanged');
  });
}
