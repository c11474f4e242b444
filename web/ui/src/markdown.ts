// Answers as sanitized markdown: marked parses, DOMPurify sanitizes (no script, no event handler,
// no javascript: URL survives), then our own DOM work adds highlighting, copy buttons, safe links
// and a cap on huge tables. Nothing from the answer is ever run.
import DOMPurify from 'dompurify';
import { Marked } from 'marked';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import css from 'highlight.js/lib/languages/css';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import python from 'highlight.js/lib/languages/python';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';

for (const [name, lang] of Object.entries({ bash, css, javascript, json, python, sql, typescript, xml, yaml }))
  hljs.registerLanguage(name, lang);
hljs.registerAliases(['sh', 'shell'], { languageName: 'bash' });
hljs.registerAliases(['js'], { languageName: 'javascript' });
hljs.registerAliases(['ts'], { languageName: 'typescript' });
hljs.registerAliases(['html'], { languageName: 'xml' });
hljs.registerAliases(['py'], { languageName: 'python' });

/** Longer answers are shown as plain text (parsing megabytes would freeze the page). */
export const MAX_MARKDOWN_CHARS = 200_000;
/** Rows shown per table; the rest are summarised. */
export const MAX_TABLE_ROWS = 200;
/** Code blocks longer than this are shown without highlighting. */
const MAX_HIGHLIGHT_CHARS = 20_000;

const marked = new Marked({ gfm: true, breaks: false, async: false });

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
/**
 * LaTeX is shown as code, never rendered (docs/chat.md "Answers"): a display formula ($$…$$ or
 * \[…\]) as a code block labelled latex, an inline one ($…$ or \(…\)) as inline code, so the
 * dollars and backslashes never read as garbled text. An inline $…$ needs no space inside its
 * ends and no digit after, so "$5 and $10" stays text.
 */
marked.use({
  extensions: [
    {
      name: 'mathBlock',
      level: 'block',
      start: (src: string) => src.match(/^ {0,3}(?:\$\$|\\\[)/m)?.index,
      tokenizer(src: string) {
        const m = /^ {0,3}(?:\$\$([\s\S]+?)\$\$|\\\[([\s\S]+?)\\\]) *(?:\n+|$)/.exec(src);
        return m ? { type: 'mathBlock', raw: m[0], text: (m[1] ?? m[2]!).trim() } : undefined;
      },
      renderer: (token) => `<pre><code class="language-latex">${escapeHtml(String(token.text))}</code></pre>\n`,
    },
    {
      name: 'mathInline',
      level: 'inline',
      start: (src: string) => src.match(/\$|\\\(/)?.index,
      tokenizer(src: string) {
        const m = /^(?:\$(?!\s)([^$\n]+?)(?<!\s)\$(?!\d)|\\\((.+?)\\\))/.exec(src);
        return m ? { type: 'mathInline', raw: m[0], text: m[1] ?? m[2]! } : undefined;
      },
      renderer: (token) => `<code>${escapeHtml(String(token.text))}</code>`,
    },
  ],
});

const purifier = DOMPurify();
purifier.addHook('afterSanitizeAttributes', (node) => {
  // Model content never wears the page's own classes (a fake "Approved" card, a fake banner): the
  // only class kept is the one marked puts on a fenced block's <code> to name its language.
  if (node.hasAttribute('class')) {
    const lang =
      node.tagName === 'CODE'
        ? (node.getAttribute('class') ?? '').split(/\s+/).find((c) => /^language-[A-Za-z0-9_+#-]{1,40}$/.test(c))
        : undefined;
    if (lang) node.setAttribute('class', lang);
    else node.removeAttribute('class');
  }
  if (
    node.hasAttribute('align') &&
    !(
      (node.tagName === 'TH' || node.tagName === 'TD') &&
      ['left', 'right', 'center'].includes(node.getAttribute('align') ?? '')
    )
  )
    node.removeAttribute('align');
  if (node.tagName === 'A') {
    const href = node.getAttribute('href') ?? '';
    // In-page anchors stay; everything else opens in a new tab without a handle on this page.
    if (!href.startsWith('#')) {
      node.setAttribute('target', '_blank');
      node.setAttribute('rel', 'noopener noreferrer nofollow');
    }
  }
});
const PURIFY = {
  RETURN_DOM_FRAGMENT: true as const,
  // No forms or controls that could pass for the page's own; no styles that could cover it.
  FORBID_TAGS: [
    'style',
    'form',
    'input',
    'button',
    'textarea',
    'select',
    'option',
    'iframe',
    'object',
    'embed',
    'svg',
    'math',
  ],
  FORBID_ATTR: ['style', 'id', 'name'],
  // A table column's alignment (`---:`): not a URL, so its value skips the URL check; kept on table
  // cells with left/right/center only (the hook above).
  ADD_URI_SAFE_ATTR: ['align'],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i,
};

/** Render an answer to a safe DOM fragment. */
export function renderMarkdown(text: string): DocumentFragment {
  if (text.length > MAX_MARKDOWN_CHARS) {
    const frag = document.createDocumentFragment();
    const pre = document.createElement('pre');
    pre.textContent = text;
    frag.append(pre);
    return frag;
  }
  const html = marked.parse(text) as string;
  const frag = purifier.sanitize(html, PURIFY) as DocumentFragment;
  for (const table of Array.from(frag.querySelectorAll('table'))) {
    const rows = table.querySelectorAll('tbody tr');
    if (rows.length > MAX_TABLE_ROWS) {
      for (let i = MAX_TABLE_ROWS; i < rows.length; i++) rows[i].remove();
      const note = document.createElement('p');
      note.className = 'muted table-note';
      note.textContent = `${rows.length - MAX_TABLE_ROWS} more rows not shown.`;
      table.after(note);
    }
    const wrap = document.createElement('div');
    wrap.className = 'table-wrap';
    wrap.tabIndex = 0;
    wrap.setAttribute('role', 'region');
    wrap.setAttribute('aria-label', 'Table');
    table.replaceWith(wrap);
    wrap.append(table);
  }
  for (const code of Array.from(frag.querySelectorAll('pre > code'))) {
    const pre = code.parentElement!;
    const lang = /language-([\w+-]+)/.exec(code.className)?.[1];
    const source = code.textContent ?? '';
    if (source.length <= MAX_HIGHLIGHT_CHARS) {
      try {
        const out =
          lang && hljs.getLanguage(lang) ? hljs.highlight(source, { language: lang }) : hljs.highlightAuto(source);
        // highlight.js escapes the source: its output holds only spans with classes.
        code.innerHTML = out.value;
        code.classList.add('hljs');
      } catch {
        // Unknown language or a highlighter bug: keep the plain text.
      }
    }
    const block = document.createElement('div');
    block.className = 'code-block';
    const bar = document.createElement('div');
    bar.className = 'code-bar';
    const label = document.createElement('span');
    label.textContent = lang ?? 'code';
    const copy = document.createElement('button');
    copy.type = 'button';
    copy.className = 'secondary small copy-code';
    copy.dataset.copy = source;
    copy.textContent = 'Copy code';
    bar.append(label, copy);
    pre.replaceWith(block);
    block.append(bar, pre);
  }
  return frag;
}
