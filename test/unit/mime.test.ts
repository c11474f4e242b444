import t from 'tap';
import { simpleParser } from 'mailparser';
import { buildMessage } from '../../tools/mime.js';

const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
const NAME = '0b9e0a3e-4c1f-4b7e-9a51-0f3b5a8d2c11.png';

t.test('text-only with an attachment: HTML is generated and the image appended by cid', async (t) => {
  const raw = await buildMessage(
    { to: ['a@example.test'], bcc: ['hidden@example.test'], subject: 'Zahlen – Q4 ✓', text: 'line 1\n<b>not html</b>' },
    [{ filename: NAME, content: PNG }],
  );
  const m = await simpleParser(raw, { keepCidLinks: true });
  t.equal(m.subject, 'Zahlen – Q4 ✓', 'non-ASCII subject encoded and decoded');
  t.notOk(m.from, 'no From without MAIL_FROM: Gmail fills in the account');
  t.match(raw.toString(), /^Bcc: hidden@example\.test/m, 'Bcc kept in the raw message for Gmail');
  t.match(String(m.html), `<img src="cid:${NAME}"`);
  t.match(String(m.html), '&lt;b&gt;not html&lt;/b&gt;', 'text escaped into the HTML part');
  t.equal(m.attachments[0].cid, NAME);
  t.ok(m.attachments[0].content.equals(PNG));
});

t.test('HTML that references the image is left as written', async (t) => {
  const html = `<p>x</p><img src="cid:${NAME}">`;
  const m = await simpleParser(
    await buildMessage(
      { to: ['a@example.test'], subject: 's', html },
      [{ filename: NAME, content: PNG }],
      'me@example.test',
    ),
    { keepCidLinks: true },
  );
  t.equal(String(m.html).split(`cid:${NAME}`).length - 1, 1, 'referenced once, not appended again');
  t.equal(m.from?.value[0].address, 'me@example.test');
});
