/**
 * The Markdown export escapes what users and the model wrote (domain/chat/export.ts, docs/chat.md
 * "Export"): rendered by a real Markdown renderer (marked, CommonMark + GFM), a hostile title,
 * prompt, answer or error gives no HTML element of its own, and the characters typed come back
 * as text.
 */
import t from 'tap';
import { marked } from 'marked';
import type { StoredTurn } from '../../core/chat-history.js';
import { chatMarkdown, markdownAnswer, markdownText } from '../../domain/chat/export.js';

const HOSTILE_TITLE = '<img src=x onerror=alert(1)> # *Q2* [link](javascript:alert(2))';
const HOSTILE_PROMPT = [
  '<script>alert(3)</script>',
  '# not a heading',
  '- not a list',
  '1. not a list either',
  '> not a quote',
  '<iframe src="https://evil.example/">',
  '![x](https://evil.example/track.png) &amp; `code` **bold** \\ | ~~gone~~',
].join('\n');

function turn(over: Partial<StoredTurn>): StoredTurn {
  return {
    turn_id: 't1',
    prompt: 'hi',
    text: '',
    status: 'done',
    stop_reason: 'end_turn',
    started_at: '2026-11-28T10:00:00.000Z',
    ended_at: '2026-11-28T10:00:01.000Z',
    tool_calls: [],
    parent_id: null,
    siblings: ['t1'],
    ...over,
  };
}

/** The HTML element names a Markdown text renders to. */
const elements = (html: string) => [...html.matchAll(/<([a-z][a-z0-9]*)\b/gi)].map((m) => m[1].toLowerCase());
/** The rendered HTML's text, entities decoded (what a reader sees). */
const visible = (html: string) =>
  html
    .replace(/<[^>]*>/g, '')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');

t.test('a prompt and a title render as the literal characters typed: no element, no link, no image', async (t) => {
  const html = await marked.parse(markdownText(HOSTILE_PROMPT));
  t.same(
    [...new Set(elements(html))],
    ['p'],
    'only paragraphs (and no script, iframe, img, a, h1, ul, ol, blockquote, code, strong, del)',
  );
  t.equal(
    visible(html).replace(/\s+/g, ' ').trim(),
    HOSTILE_PROMPT.replace(/\s+/g, ' '),
    'every character comes back as text',
  );
  const title = await marked.parse(markdownText(HOSTILE_TITLE));
  t.same(elements(title), ['p'], 'the title too');
  t.equal(visible(title).trim(), HOSTILE_TITLE);
});

t.test("the model's answer keeps its Markdown but no raw HTML; code stays as written", async (t) => {
  const answer = [
    '**Revenue** rose.',
    '<img src=x onerror=alert(1)>',
    '<!-- hidden -->',
    'Use `<b>` tags.',
    '```html',
    '<b>kept</b>',
    '```',
    'a &lt; b',
  ].join('\n');
  const html = await marked.parse(markdownAnswer(answer));
  const els = new Set(elements(html));
  t.ok(els.has('strong') && els.has('pre') && els.has('code'), "the model's Markdown still renders");
  t.notOk(els.has('img') || els.has('b'), 'raw HTML does not');
  t.notOk(html.includes('<!--'), 'nor a comment');
  t.match(html, /<code>&lt;b&gt;<\/code>/, 'a code span keeps its text');
  t.match(html, /<code class="language-html">&lt;b&gt;kept&lt;\/b&gt;/, 'a fenced block keeps its text');
  t.match(visible(html), /a &lt; b/, 'an entity the model wrote shows as typed');
});

t.test('the whole export: title, prompts, tool errors and turn errors escaped', async (t) => {
  const md = chatMarkdown(
    { title: HOSTILE_TITLE, created_at: '2026-11-28T09:00:00.000Z' },
    [
      turn({
        prompt: HOSTILE_PROMPT,
        text: 'Done <script>alert(4)</script>',
        tool_calls: [
          {
            call_id: 'c1',
            tool: 'send_email',
            input: { html: '<img src=x>' },
            status: 'error',
            error: '<img src=x onerror=alert(5)>',
            output: null,
            duration_ms: 3,
            started_at: '2026-11-28T10:00:00.000Z',
          },
        ],
        error: { code: 'ERR_MAIL_DENIED', message: '<b>bad</b>' },
      }),
    ],
    '2026-11-28T11:00:00.000Z',
  );
  const html = await marked.parse(md);
  const els = new Set(elements(html));
  for (const bad of ['script', 'img', 'iframe', 'b', 'a', 'blockquote', 'ul', 'ol'])
    t.notOk(els.has(bad), `no <${bad}>`);
  t.match(
    html,
    /<h1>&lt;img src=x onerror=alert\(1\)&gt; # \*Q2\* \[link\]\(javascript:alert\(2\)\)<\/h1>/,
    'the title is one literal heading',
  );
  t.match(visible(html), /<img src=x onerror=alert\(5\)>/, "the tool's error shows as text");
  t.match(visible(html), /The answer ended with an error: <b>bad<\/b> \(ERR_MAIL_DENIED\)/, "the turn's error too");
  t.match(html, /<code class="language-json">[^]*&lt;img src=x&gt;/, "the tool's input stays in its fenced block");
});
