// Chat page: sessions, live NDJSON stream of tool calls, text and charts.
import { h, clear, api, csrf, banner, fmtTime } from './lib.js';

let current = null; // session id

export async function chatPage(hash) {
  const m = hash.match(/^#\/chat\/([^/]+)/);
  current = m ? decodeURIComponent(m[1]) : null;
  const list = h('ul', { class: 'sessions', id: 'session-list', 'aria-label': 'Chat sessions' });
  const transcript = h('div', { class: 'transcript', id: 'transcript', 'aria-live': 'polite' });
  const input = h('textarea', { id: 'prompt', name: 'prompt', placeholder: 'Ask the agent… e.g. “chart 3, 5, 2 and email the chart to someone@example.com”', required: true });
  const send = h('button', { type: 'submit', id: 'send' }, 'Send');
  const composer = h('form', { class: 'composer', 'aria-label': 'Send a message' }, h('label', { for: 'prompt', class: 'visually-hidden', style: 'position:absolute;left:-999px' }, 'Message'), input, send);
  const account = h('div', { id: 'account' });
  const side = h('aside', { class: 'panel', 'aria-label': 'Sessions' },
    h('button', { type: 'button', id: 'new-session', onclick: () => { location.hash = '#/chat'; } }, 'New chat'),
    h('h2', { style: 'margin-top:12px' }, 'Sessions'), list, h('h2', { style: 'margin-top:12px' }, 'Workspace account'), account);
  const model = h('p', { id: 'model', class: 'muted' });
  const pane = h('section', { class: 'panel', 'aria-label': 'Conversation' }, h('h1', { id: 'chat-heading' }, current ? 'Chat' : 'New chat'), model, transcript, composer);

  composer.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    input.value = '';
    send.disabled = true;
    try {
      await streamTurn(text, transcript);
    } finally {
      send.disabled = false;
      input.focus();
      loadSessions(list).catch(() => {});
    }
  });
  input.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && !ev.shiftKey) { ev.preventDefault(); composer.requestSubmit(); }
  });

  loadSessions(list).catch((e) => list.append(h('li', { class: 'error' }, e.message)));
  loadAccount(account).catch(() => account.append(h('p', { class: 'muted' }, 'Not available.')));
  loadModel(model).catch(() => {});
  if (current) await loadHistory(current, transcript).catch((e) => transcript.append(banner('error', e.message)));
  else transcript.append(h('p', { class: 'muted' }, 'Start a conversation. The agent can read your spreadsheets, draw charts and send mail for you.'));
  return h('div', { class: 'chat' }, side, pane);
}

// The offline demo model is scripted, not an AI: say so where the user chats.
async function loadModel(box) {
  const r = await api('GET', '/api/chat/model');
  if (r.demo) {
    box.dataset.demo = 'true';
    box.append(h('span', { class: 'badge warning' }, 'Demo model'), ' Offline and scripted, not a real AI model: try “chart the sample spreadsheet and email it to someone@example.com”.');
  } else {
    box.append('Model: ', h('strong', {}, r.model || r.provider));
  }
}

async function loadSessions(list) {
  const r = await api('GET', '/api/chat/sessions');
  const sessions = Array.isArray(r) ? r : r.sessions || [];
  clear(list);
  if (!sessions.length) list.append(h('li', { class: 'muted' }, 'No sessions yet.'));
  for (const s of sessions) {
    const b = h('button', { type: 'button', title: s.title || s.id, onclick: () => { location.hash = `#/chat/${encodeURIComponent(s.id)}`; } },
      s.title || `Session ${fmtTime(s.created_at)}`);
    if (s.id === current) b.setAttribute('aria-current', 'true');
    list.append(h('li', {}, b));
  }
}

/** Disconnect: Airlock forgets the tokens, asks Google to revoke the grant and ends warm sandboxes. */
async function disconnectAccount(box) {
  if (!confirm('Disconnect your workspace account? Airlock forgets its tokens, asks Google to revoke them, and restarts your open chats\' sandboxes.')) return;
  let r;
  try {
    r = await api('DELETE', '/api/account');
  } catch (e) {
    box.append(banner('error', `${e.message} (${e.code})`));
    return;
  }
  await loadAccount(box);
  if (r && r.revoked_at_provider === false) {
    box.append(banner('error', 'Disconnected from Airlock, but Google did not confirm the revocation. To be sure, remove Airlock at https://myaccount.google.com/permissions.'));
  } else {
    box.append(banner('info', r && r.revoked_at_provider ? 'Disconnected. Google revoked Airlock\'s access.' : 'Disconnected.'));
  }
}

async function loadAccount(box) {
  const r = await api('GET', '/api/account');
  clear(box);
  if (r.connected) {
    box.append(h('p', { class: 'ok' }, `Connected${r.email ? ` as ${r.email}` : ''}.`),
      h('button', { type: 'button', class: 'secondary', id: 'disconnect-account', onclick: () => disconnectAccount(box) }, 'Disconnect'));
  } else {
    const connect = h('button', { type: 'button', id: 'connect-account' }, 'Connect workspace account');
    connect.addEventListener('click', async () => {
      try {
        const r = await api('POST', '/api/account/connect', { return_to: '/' });
        location.href = r.authorization_url;
      } catch (e) {
        box.append(banner('error', `${e.message} (${e.code})`));
      }
    });
    box.append(h('p', { class: 'muted' }, 'Not connected: mail and spreadsheet tools need it. After connecting, start a new chat so the tools can use it.'), connect);
  }
}

async function loadHistory(id, transcript) {
  const r = await api('GET', `/api/chat/sessions/${encodeURIComponent(id)}/messages`);
  const turns = Array.isArray(r) ? r : r.turns || r.messages || [];
  clear(transcript);
  for (const t of turns) {
    transcript.append(userMsg(t.prompt));
    const view = assistantView(transcript);
    for (const c of t.tool_calls || []) {
      view.toolStart({ call_id: c.call_id || c.id, tool: c.tool, input: c.input });
      view.toolEnd({ call_id: c.call_id || c.id, tool: c.tool, ok: c.ok ?? c.status === 'ok', output: c.output, error: c.error, duration_ms: c.duration_ms });
    }
    if (t.text) view.text(t.text);
    if (t.error || (t.stop_reason && t.stop_reason !== 'end_turn')) view.done({ stop_reason: t.stop_reason, error: t.error });
  }
}

function userMsg(text) {
  return h('div', { class: 'msg user' }, h('span', { class: 'bubble' }, text));
}

/** Renders one assistant turn as events arrive. */
function assistantView(transcript) {
  const box = h('div', { class: 'msg assistant' });
  transcript.append(box);
  const tools = new Map();
  let bubble = null;
  return {
    toolStart(e) {
      bubble = null;
      const status = h('span', { class: 'status running' }, 'running…');
      const dur = h('span', { class: 'muted' });
      const body = h('div', { class: 'body' }, h('div', {}, 'Input'), h('pre', {}, JSON.stringify(e.input ?? {}, null, 2)));
      const row = h('details', { class: 'tool', 'data-tool': e.tool, 'data-call': e.call_id }, h('summary', {}, h('code', {}, e.tool), status, dur), body);
      tools.set(e.call_id, { row, status, dur, body });
      box.append(row);
    },
    toolEnd(e) {
      const t = tools.get(e.call_id);
      if (!t) return;
      t.status.textContent = e.ok ? 'done' : 'failed';
      t.status.className = `status ${e.ok ? 'ok' : 'failed'}`;
      t.row.dataset.status = e.ok ? 'ok' : 'failed';
      if (e.duration_ms !== undefined) t.dur.textContent = `${e.duration_ms} ms`;
      const out = parseOutput(e.output);
      if (e.error) t.body.append(h('div', { class: 'error' }, e.error));
      if (out !== undefined) t.body.append(h('div', {}, 'Output'), h('pre', {}, typeof out === 'string' ? out : JSON.stringify(out, null, 2)));
      if (e.ok && e.tool === 'render_chart') drawChart(box, out);
      if (e.ok && e.tool === 'rasterize_chart') showAttachment(box, out);
    },
    text(s) {
      if (!bubble) {
        bubble = h('span', { class: 'bubble' });
        box.append(h('div', {}, bubble));
      }
      bubble.textContent += s;
    },
    done(e) {
      if (e.stop_reason && e.stop_reason !== 'end_turn') {
        const msg = e.error ? `${e.error.message} (${e.error.code})` : `Turn ended: ${e.stop_reason}`;
        box.append(banner(e.stop_reason === 'cancelled' ? 'info' : 'error', msg));
      }
      box.dataset.done = e.stop_reason || 'end_turn';
    },
    /** The turn broke off before `done`: say why, and stop showing tools as running. */
    interrupted(why) {
      for (const t of tools.values()) {
        if (t.row.dataset.status) continue;
        t.status.textContent = 'interrupted';
        t.status.className = 'status failed';
        t.row.dataset.status = 'interrupted';
      }
      box.append(banner('error', why));
      box.dataset.done = 'interrupted';
    },
  };
}

function parseOutput(o) {
  if (typeof o === 'string') {
    try { return JSON.parse(o); } catch { return o; }
  }
  return o;
}

function findChartSpec(o) {
  if (!o || typeof o !== 'object') return null;
  if (o.chart && typeof o.chart === 'object') return findChartSpec(o.chart);
  if (o.spec && typeof o.spec === 'object') return findChartSpec(o.spec);
  if (o.type && o.data) return o;
  if (o.type && (o.labels || o.datasets)) {
    return { type: o.type, data: { labels: o.labels, datasets: o.datasets }, options: { plugins: { title: { display: !!o.title, text: o.title } } } };
  }
  return null;
}

function drawChart(box, out) {
  const spec = findChartSpec(out);
  if (!spec || !window.Chart) return;
  const canvas = h('canvas', { role: 'img', 'aria-label': spec.options?.plugins?.title?.text || 'chart', width: 600, height: 300 });
  box.append(h('div', { class: 'chart-box', 'data-chart': 'render_chart' }, canvas));
  // eslint-disable-next-line no-new
  new window.Chart(canvas, { ...spec, options: { responsive: true, animation: false, ...(spec.options || {}) } });
}

function showAttachment(box, out) {
  const f = out && (out.chart_attachment?.filename || out.filename || (typeof out.chart_attachment === 'string' ? out.chart_attachment : null));
  if (!f || !/^[0-9a-f-]{36}\.png$/i.test(f)) return;
  box.append(h('img', { class: 'attachment', src: `/api/chat/attachments/${f}`, alt: `Chart attachment ${f}`, 'data-attachment': f }));
}

/** Make the page name this chat session (a new chat learns its id from the server). */
function adoptSession(id) {
  if (current || !id) return;
  current = id;
  history.replaceState(null, '', `#/chat/${encodeURIComponent(current)}`);
  const heading = document.getElementById('chat-heading');
  if (heading) heading.textContent = 'Chat';
}

/**
 * POST the prompt and render NDJSON events as they arrive. Every turn ends on the page: with the
 * server's `done`, or, when the stream drops or carries a line that is not JSON, as interrupted.
 */
async function streamTurn(text, transcript) {
  if (transcript.querySelector('p.muted')) clear(transcript);
  transcript.append(userMsg(text));
  const view = assistantView(transcript);
  const body = { message: text };
  if (current) body.session_id = current;
  let res;
  try {
    res = await fetch('/api/chat/messages', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', 'x-csrf-token': await csrf(), accept: 'application/x-ndjson' },
      body: JSON.stringify(body),
    });
  } catch (e) {
    view.done({ stop_reason: 'error', error: { code: 'ERR_NETWORK', message: 'Could not reach the server.' } });
    return;
  }
  if (!res.ok) {
    let err = { code: 'ERR_HTTP', message: `HTTP ${res.status}` };
    try { err = (await res.json()).error || err; } catch { /* not JSON */ }
    view.done({ stop_reason: 'error', error: err });
    return;
  }
  // The session exists from the first byte: a turn that breaks off still belongs to it.
  adoptSession(res.headers.get('x-chat-session-id'));
  let ended = false;
  try {
    for await (const e of ndjson(res.body)) {
      if (e.type === 'tool_start') view.toolStart(e);
      else if (e.type === 'tool_end') view.toolEnd(e);
      else if (e.type === 'text_delta') view.text(e.text);
      else if (e.type === 'done') {
        view.done(e);
        adoptSession(e.session_id);
        ended = true;
      }
    }
    // A stream that ends without `done` is a turn cut short (the server always writes one).
    if (!ended) view.interrupted(DROPPED);
  } catch (err) {
    if (!ended) view.interrupted(err instanceof StreamBroken ? DROPPED : `Could not show this answer: ${err.message}`);
  }
}

const DROPPED = 'The connection to the server dropped, so this turn may be incomplete. Reload the chat to see what was saved.';

/** The response stream failed: the connection dropped, or a line was not JSON. */
class StreamBroken extends Error {}

/** The objects of an NDJSON response body, one per line, as they arrive. */
async function* ndjson(body) {
  const reader = body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  try {
    for (;;) {
      let chunk;
      try {
        chunk = await reader.read();
      } catch (err) {
        throw new StreamBroken('the response stream failed', { cause: err });
      }
      if (chunk.done) return;
      buf += dec.decode(chunk.value, { stream: true });
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (!line) continue;
        let event;
        try {
          event = JSON.parse(line);
        } catch (err) {
          throw new StreamBroken('a line of the response is not JSON', { cause: err });
        }
        yield event;
      }
    }
  } finally {
    // Stopped early (a broken stream, or the page failed on an event): let the connection go.
    reader.cancel().catch(() => { /* already closed or failed */ });
  }
}
