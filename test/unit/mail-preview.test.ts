/**
 * The preview of a held send (domain/mail/preview.ts) and the names charts get in a message
 * (tools/attachments.ts): messages built by the send_email tool's own composer (tools/mime.ts)
 * and by hand (HTML only, quoted-printable, a non-image attachment, over the limits).
 */
import t from 'tap';
import {
  mailPreview,
  htmlToText,
  partsDiffer,
  PREVIEW_HTML_CHARS,
  PREVIEW_TEXT_CHARS,
  PREVIEW_IMAGE_BYTES,
} from '../../domain/mail/preview.js';
import { buildMessage } from '../../tools/mime.js';
import { chartFileName, uniqueNames } from '../../tools/attachments.js';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);
const crlf = (lines: string[]) => Buffer.from(lines.join('\r\n'));

t.test(
  'a message of the send_email tool: every address header, the text, the chart with its name and bytes',
  async (t) => {
    const raw = await buildMessage(
      {
        to: ['a@x.example', 'b@y.example'],
        cc: ['c@corp.example'],
        bcc: ['d@corp.example'],
        subject: 'Zahlen für Q3 ✓',
        text: 'Grüße,\nAnn',
      },
      [{ filename: '0b8f7a2e-1111-4222-8333-944455556666.png', name: 'umsatz.png', content: PNG }],
      'me@corp.example',
    );
    const p = mailPreview(raw);
    t.same(
      [p.from, p.to, p.cc, p.bcc],
      [['me@corp.example'], ['a@x.example', 'b@y.example'], ['c@corp.example'], ['d@corp.example']],
    );
    t.equal(p.subject, 'Zahlen für Q3 ✓', 'the subject, its encoded words decoded');
    t.equal(p.text.trim(), 'Grüße,\nAnn', 'the plain part (not the HTML alternative), UTF-8');
    t.equal(p.text_from, 'plain');
    t.equal(p.attachments.length, 1);
    t.match(p.attachments[0], { name: 'umsatz.png', content_type: 'image/png', size: PNG.length });
    t.ok(Buffer.from(p.attachments[0].data!).equals(PNG), 'the image bytes, decoded');
  },
);

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
  t.same(
    p.attachments,
    [{ name: 'report.pdf', content_type: 'application/pdf', size: 13 }],
    'no bytes kept for a non-image',
  );
  t.same([p.cc, p.bcc], [[], []]);
});

t.test(
  'bounded: a text over the limit is not shown at all; an image over the limit listed without its bytes',
  async (t) => {
    const big = Buffer.alloc(PREVIEW_IMAGE_BYTES + 1, 1);
    const long = await buildMessage(
      { to: ['a@x.example'], subject: 'long', text: 'x'.repeat(PREVIEW_TEXT_CHARS + 500) },
      [],
    );
    t.throws(
      () => mailPreview(long),
      { message: /a text part over/ },
      'a text part over the bound: never a cut preview',
    );
    const huge = await buildMessage(
      { to: ['a@x.example'], subject: 'long', html: `<p>${'x'.repeat(PREVIEW_HTML_CHARS)}</p>` },
      [],
    );
    t.throws(() => mailPreview(huge), { message: /an HTML part over/ });
    const raw = await buildMessage({ to: ['a@x.example'], subject: 'img', text: 'see chart' }, [
      { filename: '0b8f7a2e-1111-4222-8333-944455556666.png', content: big },
    ]);
    const p = mailPreview(raw);
    t.equal(p.truncated, false);
    t.equal(p.attachments[0].size, big.length);
    t.equal(p.attachments[0].data, undefined, 'too large for a thumbnail');
  },
);

t.test('the text and the HTML part: both shown; a difference in words is flagged, layout is not', async (t) => {
  const same = mailPreview(
    await buildMessage(
      {
        to: ['a@x.example'],
        subject: 's',
        text: 'Hi, the Q2 numbers:\n- Revenue 181\n- Costs 99',
        html: '<p>Hi, the <b>Q2</b> numbers:</p><ul><li>Revenue 181</li><li>Costs&nbsp;99</li></ul>',
      },
      [],
    ),
  );
  t.equal(same.text_from, 'plain');
  t.match(same.html, /<ul><li>Revenue 181<\/li>/, 'the HTML part as sent');
  t.equal(same.parts_differ, false, 'the same words in other layout: no warning');
  const differ = mailPreview(
    await buildMessage(
      {
        to: ['a@x.example'],
        subject: 's',
        text: 'Hi, please find the Q2 numbers. Revenue 181, costs 99.',
        html: '<p>Hi, please find the Q2 numbers. Revenue 181, costs 99.</p><p>Also forwarding our internal salary sheet link: <a href="https://intranet.corp.example/salaries">here</a></p>',
      },
      [],
    ),
  );
  t.equal(differ.parts_differ, true, 'words added in the HTML: flagged');
  t.equal(differ.text, 'Hi, please find the Q2 numbers. Revenue 181, costs 99.');
  t.equal(partsDiffer('Revenue 181', '<p>Revenue 18l</p>'), true, 'one changed character is a difference');
  t.equal(
    partsDiffer('x', '<p>x</p><script>hidden()</script><style>p{}</style>'),
    false,
    'script and style are no visible text',
  );
});

const MULTI = (type: string, parts: string[][]) => [
  'MIME-Version: 1.0',
  `Content-Type: ${type}; boundary="b1"`,
  '',
  ...parts.flatMap((p) => ['--b1', ...p]),
  '--b1--',
  '',
];
const HEAD = ['From: me@corp.example', 'To: a@x.example', 'Subject: s'];

t.test('a message the card cannot show faithfully throws PreviewIncomplete with the reason', async (t) => {
  const plain = ['Content-Type: text/plain', '', 'hello'];
  const html = ['Content-Type: text/html', '', '<p>hello</p>'];
  const cases: [string, string[], RegExp][] = [
    [
      'an unknown alternative',
      [...HEAD, ...MULTI('multipart/alternative', [plain, ['Content-Type: text/watch-html', '', 'other words']])],
      /an alternative part of type text\/watch-html/,
    ],
    [
      'two HTML parts',
      [...HEAD, ...MULTI('multipart/mixed', [html, ['Content-Type: text/html', '', '<p>second</p>']])],
      /more than one text\/html body part/,
    ],
    ['two text parts', [...HEAD, ...MULTI('multipart/mixed', [plain, plain])], /more than one text\/plain body part/],
    ['another multipart type', [...HEAD, ...MULTI('multipart/signed', [plain])], /a multipart\/signed part/],
    [
      'an unknown transfer encoding',
      [...HEAD, 'Content-Transfer-Encoding: x-uuencode', '', 'begin 644 x'],
      /unknown transfer encoding/,
    ],
    ['an unknown charset', [...HEAD, 'Content-Type: text/plain; charset=x-no-such', '', 'hi'], /unknown character set/],
  ];
  for (const [what, lines, why] of cases)
    t.throws(() => mailPreview(crlf(lines)), { name: 'Error', message: why }, what);
  // Nested deeper than the composer ever nests.
  let body = plain;
  for (let i = 0; i < 6; i++)
    body = [`Content-Type: multipart/mixed; boundary="n${i}"`, '', `--n${i}`, ...body, `--n${i}--`];
  t.throws(
    () => mailPreview(crlf([...HEAD, 'MIME-Version: 1.0', ...body])),
    { message: /nested deeper/ },
    'deep nesting',
  );
  // An unnamed part that is no body text is listed as an attachment, not dropped.
  const p = mailPreview(
    crlf([...HEAD, ...MULTI('multipart/mixed', [plain, ['Content-Type: application/octet-stream', '', 'xyz']])]),
  );
  t.same(p.attachments, [{ name: '(unnamed)', content_type: 'application/octet-stream', size: 3 }]);
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
