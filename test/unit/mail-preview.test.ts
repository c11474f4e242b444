/**
 * The preview of a held send (daemon/mail-preview.ts) and the names charts get in a message
 * (tools/attachments.ts): messages built by the send_email tool's own composer (tools/mime.ts)
 * and by hand (HTML only, quoted-printable, a non-image attachment, over the limits).
 */
import t from 'tap';
import { mailPreview, htmlToText, PREVIEW_TEXT_CHARS, PREVIEW_IMAGE_BYTES } from '../../daemon/mail-preview.js';
import { buildMessage } from '../../tools/mime.js';
import { chartFileName, uniqueNames } from '../../tools/attachments.js';

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
const crlf = (lines: string[]) => Buffer.from(lines.join('\r\n'));

t.test('a message of the send_email tool: every address header, the text, the chart with its name and bytes', async (t) => {
  const raw = await buildMessage(
    { to: ['a@x.example', 'b@y.example'], cc: ['c@corp.example'], bcc: ['d@corp.example'], subject: 'Zahlen für Q3 ✓', text: 'Grüße,\nAnn' },
    [{ filename: '0b8f7a2e-1111-4222-8333-944455556666.png', name: 'umsatz.png', content: PNG }],
    'me@corp.example',
  );
  const p = mailPreview(raw);
  t.same([p.from, p.to, p.cc, p.bcc], [['me@corp.example'], ['a@x.example', 'b@y.example'], ['c@corp.example'], ['d@corp.example']]);
  t.equal(p.subject, 'Zahlen für Q3 ✓', 'the subject, its encoded words decoded');
  t.equal(p.text.trim(), 'Grüße,\nAnn', 'the plain part (not the HTML alternative), UTF-8');
  t.equal(p.text_from, 'plain');
  t.equal(p.attachments.length, 1);
  t.match(p.attachments[0], { name: 'umsatz.png', content_type: 'image/png', size: PNG.length });
  t.ok(Buffer.from(p.attachments[0].data!).equals(PNG), 'the image bytes, decoded');
});

t.test('an HTML-only body as text; quoted-printable; a PDF listed by name and size only', async (t) => {
  const raw = crlf([
    'From: me@corp.example',
    'To: a@x.example',
    'Subject: html',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="b1"',
    '',
    '--b1',
    'Content-Type: text/html; charset=utf-8',
    'Content-Transfer-Encoding: quoted-printable',
    '',
    '<html><head><style>p{color:red}</style></head><body><p>Hello &amp; welcome=',
    '</p><script>alert(1)</script><p>Caf=C3=A9 <b>bold</b></p></body></html>',
    '--b1',
    'Content-Type: application/pdf; name="report.pdf"',
    'Content-Disposition: attachment; filename="report.pdf"',
    'Content-Transfer-Encoding: base64',
    '',
    Buffer.from('%PDF-1.4 fake').toString('base64'),
    '--b1--',
    '',
  ]);
  const p = mailPreview(raw);
  t.equal(p.text_from, 'html');
  t.equal(p.text, 'Hello & welcome\nCafé bold', 'tags, scripts and styles dropped; entities and QP decoded');
  t.same(p.attachments, [{ name: 'report.pdf', content_type: 'application/pdf', size: 13 }], 'no bytes kept for a non-image');
  t.same([p.cc, p.bcc], [[], []]);
});

t.test('bounded: the text cut at the limit; an image over the limit listed without its bytes', async (t) => {
  const big = Buffer.alloc(PREVIEW_IMAGE_BYTES + 1, 1);
  const raw = await buildMessage({ to: ['a@x.example'], subject: 'long', text: 'x'.repeat(PREVIEW_TEXT_CHARS + 500) }, [{ filename: '0b8f7a2e-1111-4222-8333-944455556666.png', content: big }]);
  const p = mailPreview(raw);
  t.equal(p.text.length, PREVIEW_TEXT_CHARS);
  t.equal(p.truncated, true);
  t.equal(p.attachments[0].size, big.length);
  t.equal(p.attachments[0].data, undefined, 'too large for a thumbnail');
});

t.test('CRLF line ends of a plain body read as line breaks', async (t) => {
  const p = mailPreview(crlf(['From: me@corp.example', 'To: a@x.example', 'Subject: s', '', 'one', 'two', '']));
  t.equal(p.text, 'one\ntwo\n');
});

t.test('htmlToText: numeric entities, line breaks', async (t) => {
  t.equal(htmlToText('a<br>b&#233;&#x263A;<div>c</div>d'), 'a\nbé☺c\nd');
});

t.test('chart file names from titles: slugged, never a path or a quote; repeats numbered', async (t) => {
  t.equal(chartFileName('Quarterly revenue (EUR) — 2026'), 'quarterly-revenue-eur-2026.png');
  t.equal(chartFileName('Ümsätze für Köln'), 'umsatze-fur-koln.png', 'accents dropped');
  t.equal(chartFileName('../../etc/passwd'), 'etc-passwd.png', 'no path');
  t.equal(chartFileName('"a"\r\nContent-Type: x'), 'a-content-type-x.png', 'no quote, no line break');
  t.equal(chartFileName('日本語'), 'chart.png', 'nothing left: chart.png');
  t.equal(chartFileName(undefined), 'chart.png');
  t.equal(chartFileName('x'.repeat(300)).length, 64, 'at most 60 characters and .png');
  t.same(uniqueNames(['a.png', 'b.png', 'a.png', 'a.png']), ['a.png', 'b.png', 'a-2.png', 'a-3.png']);
});
