import type { IncomingMessage, ServerResponse } from 'node:http';
import { send, type ServiceHandler } from './google-common.js';
import type { MailAttachment, MailboxMessage } from './google-gmail.js';

/**
 * The recipient's side of the Gmail emulator, for demos and tests (no token needed):
 *   GET /mailbox        HTML page of received messages
 *   GET /mailbox/{id}   one message, HTML body with cid: images resolved
 *   GET /mailbox.json   the mailbox as JSON (no attachment bytes)
 */

function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** The message's HTML with every cid: reference replaced by a data: URI of that part. */
export function resolveCids(html: string, attachments: MailAttachment[]): string {
  return html.replace(/cid:([^"'\s)>]+)/gi, (whole, id: string) => {
    const a = attachments.find((x) => x.cid === id || x.contentId === `<${id}>`);
    return a ? `data:${a.contentType};base64,${a.content.toString('base64')}` : whole;
  });
}

function page(title: string, body: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${esc(title)}</title>
<style>body{font-family:system-ui,sans-serif;margin:2rem;max-width:60rem}table{border-collapse:collapse;width:100%}
td,th{border-bottom:1px solid #ddd;padding:.4rem;text-align:left}iframe{width:100%;min-height:32rem;border:1px solid #ccc}
.meta{color:#555}</style></head><body>${body}</body></html>`;
}

function listPage(box: readonly MailboxMessage[]): string {
  const rows = box
    .slice()
    .reverse()
    .map(
      (m) =>
        `<tr><td>${esc(m.receivedAt)}</td><td>${esc(m.from)}</td><td>${esc(m.to.join(', '))}</td><td><a href="/mailbox/${esc(m.id)}">${esc(m.subject || '(no subject)')}</a></td><td>${m.attachments.length}</td></tr>`,
    )
    .join('');
  return page(
    'Mailbox',
    `<h1>Mailbox</h1><p class="meta">${box.length} message(s) sent through the emulated Gmail API.</p>
<table><thead><tr><th>Received</th><th>From</th><th>To</th><th>Subject</th><th>Parts</th></tr></thead><tbody>${rows}</tbody></table>`,
  );
}

function messagePage(m: MailboxMessage): string {
  // The agent wrote this HTML: show it in a sandboxed iframe (no scripts, no same-origin).
  const body = m.html !== undefined ? resolveCids(m.html, m.attachments) : `<pre>${esc(m.text ?? '')}</pre>`;
  return page(
    m.subject,
    `<p><a href="/mailbox">← Mailbox</a></p><h1>${esc(m.subject || '(no subject)')}</h1>
<p class="meta">From ${esc(m.from)} · To ${esc(m.to.join(', '))}${m.cc.length ? ` · Cc ${esc(m.cc.join(', '))}` : ''} · ${esc(m.receivedAt)}</p>
<iframe sandbox="" referrerpolicy="no-referrer" srcdoc="${esc(body)}"></iframe>`,
  );
}

export function mailboxPages(mailbox: readonly MailboxMessage[]): ServiceHandler {
  return (req: IncomingMessage, res: ServerResponse, url: URL): boolean => {
    const path = url.pathname;
    const method = req.method ?? 'GET';
    if (method === 'GET' && (path === '/mailbox' || path === '/mailbox/')) {
      res.writeHead(200, {
        'content-type': 'text/html; charset=utf-8',
        'content-security-policy': "default-src 'none'; img-src data:; style-src 'unsafe-inline'; frame-src 'self'",
      });
      res.end(listPage(mailbox));
      return true;
    }
    if (method === 'GET' && path === '/mailbox.json') {
      send(res, 200, {
        messages: mailbox.map(({ raw: _raw, attachments, ...m }) => ({
          ...m,
          attachments: attachments.map(({ content: _c, ...a }) => a),
        })),
      });
      return true;
    }
    const one = /^\/mailbox\/([A-Za-z0-9]+)$/.exec(path);
    if (method === 'GET' && one) {
      const m = mailbox.find((x) => x.id === one[1]);
      if (!m) {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('no such message');
        return true;
      }
      res.writeHead(200, {
        'content-type': 'text/html; charset=utf-8',
        'content-security-policy': "default-src 'none'; img-src data:; style-src 'unsafe-inline'",
      });
      res.end(messagePage(m));
      return true;
    }

    return false;
  };
}
