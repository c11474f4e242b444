// The HTML part of a held send as the recipient's mail program shows it (docs/chat.md#approvals):
// sanitised with DOMPurify, rendered in a sandboxed frame (no scripts, no same origin, a CSP that
// loads nothing from anywhere), every link followed by its real target and listed under the frame,
// remote images not loaded (named instead), inline images named (they are shown as attachments).
import DOMPurify from 'dompurify';

/** One link of the HTML part: what it says and where it really goes. */
export interface MailLink {
  text: string;
  href: string;
}

const purifier = DOMPurify();
const PURIFY = {
  RETURN_DOM_FRAGMENT: true as const,
  // Nothing that loads, submits or runs; the frame's CSP would stop it anyway.
  FORBID_TAGS: [
    'form',
    'input',
    'button',
    'textarea',
    'select',
    'option',
    'iframe',
    'frame',
    'object',
    'embed',
    'link',
    'meta',
    'base',
    'svg',
    'math',
    'audio',
    'video',
    'source',
    'picture',
  ],
  FORBID_ATTR: ['srcset', 'background', 'poster', 'action', 'formaction', 'ping'],
};
/** The frame loads nothing: inline styles only, images only as data: (none are put there). */
const FRAME_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

function note(doc: Document, text: string): HTMLElement {
  const s = doc.createElement('span');
  s.className = 'airlock-note';
  s.textContent = text;
  return s;
}

/** The sanitised HTML part as a whole document for the frame's srcdoc, and its links. */
export function mailHtmlDocument(html: string): { doc: string; links: MailLink[] } {
  const frag = purifier.sanitize(html, PURIFY);
  const owner = frag.ownerDocument;
  const links: MailLink[] = [];
  for (const a of Array.from(frag.querySelectorAll('a'))) {
    const href = a.getAttribute('href');
    a.removeAttribute('target');
    if (!href) continue;
    const text = (a.textContent ?? '').replace(/\s+/g, ' ').trim();
    links.push({ text, href });
    // The target right after the text: a link cannot say one address and go to another unseen.
    a.after(note(owner, ` [→ ${href}]`));
    a.setAttribute('title', href);
  }
  for (const img of Array.from(frag.querySelectorAll('img'))) {
    const src = img.getAttribute('src') ?? '';
    const alt = img.getAttribute('alt');
    img.replaceWith(
      note(
        owner,
        src.toLowerCase().startsWith('cid:')
          ? `[inline image${alt ? `: ${alt}` : ''}, shown under Attachments]`
          : `[remote image not loaded: ${src || '(no address)'}]`,
      ),
    );
  }
  const box = owner.createElement('div');
  box.append(frag);
  const doc =
    `<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${FRAME_CSP}">` +
    '<style>body{font:14px/1.45 system-ui,sans-serif;margin:8px;color:#111;background:#fff;overflow-wrap:anywhere}.airlock-note{color:#555;font-size:12px;font-family:monospace}</style>' +
    `</head><body>${box.innerHTML}</body></html>`;
  return { doc, links };
}

/** The HTML part in its sandboxed frame, and its links listed with their targets. */
export function HtmlPart({ html }: { html: string }) {
  const { doc, links } = mailHtmlDocument(html);
  return (
    <div class="approval-part approval-html-part">
      <div class="muted">HTML part (what most mail programs show)</div>
      {/* No allow-scripts, no allow-same-origin, no allow-popups: the message can run, reach and open nothing. */}
      <iframe
        class="approval-html"
        sandbox=""
        srcdoc={doc}
        title="HTML part of the message"
        referrerpolicy="no-referrer"
      />
      {links.length > 0 && (
        <>
          <div class="muted">Links in the HTML part</div>
          <ul class="approval-links">
            {links.map((l, i) => (
              <li key={i}>
                {l.text || '(no text)'} → <code>{l.href}</code>
              </li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}
