// Small helpers shared by the pages.
export const state = { me: undefined, csrf: null };

export class ApiError extends Error {
  constructor(status, code, message, body) {
    super(message);
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

/** Create an element: h('a', { href, onclick }, 'text', child). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'value') el.value = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  // Flatten fully: a render function may return nested arrays of nodes and strings.
  for (const c of children.flat(Infinity)) if (c !== undefined && c !== null && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
}

export async function csrf() {
  if (!state.csrf) {
    const r = await fetch('/api/auth/csrf', { credentials: 'same-origin' });
    state.csrf = (await r.json()).csrf_token;
  }
  return state.csrf;
}

/** JSON API call with the session cookie and CSRF token; throws ApiError with the server's code. */
export async function api(method, path, body) {
  const headers = { accept: 'application/json' };
  if (method !== 'GET') headers['x-csrf-token'] = await csrf();
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, { method, headers, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body) });
  if (res.status === 204) return null;
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = text; }
  if (!res.ok) {
    const e = data && data.error ? data.error : { code: 'ERR_HTTP', message: `HTTP ${res.status}` };
    if (e.code === 'ERR_AUTH_CSRF') state.csrf = null;
    throw new ApiError(res.status, e.code, e.message, data);
  }
  if (data && data.csrf_token) state.csrf = data.csrf_token;
  return data;
}

export function fmtTime(s) {
  if (!s) return '';
  const d = new Date(s);
  return isNaN(d) ? String(s) : d.toLocaleString();
}

/** A table from rows and column definitions [{ key, title, render? }]. */
export function table(rows, cols, opts = {}) {
  const t = h('table', opts.id ? { id: opts.id } : {},
    h('thead', {}, h('tr', {}, cols.map((c) => h('th', { scope: 'col' }, c.title)))),
    h('tbody', {}, rows.length ? rows.map((r) => h('tr', {}, cols.map((c) => h('td', {}, c.render ? c.render(r) : fmtCell(r[c.key])))))
      : h('tr', {}, h('td', { colspan: cols.length, class: 'muted' }, opts.empty || 'Nothing yet.'))),
  );
  return t;
}

function fmtCell(v) {
  if (v === null || v === undefined) return '';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

export function banner(kind, text) {
  return h('div', { class: `banner ${kind}`, role: kind === 'error' ? 'alert' : 'status' }, text);
}
