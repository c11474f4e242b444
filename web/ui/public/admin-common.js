// Shared pieces for the admin pages: labelled fields, plain error boxes, small forms.
import { h, clear, api, ApiError } from './lib.js';

let seq = 0;
/** A labelled input: returns { wrap, input }. The label's for= always points at the control. */
export function field(label, control, hint) {
  if (!control.id) control.id = `f${++seq}`;
  const hintEl = hint ? h('div', { class: 'hint muted', id: `${control.id}-hint` }, hint) : null;
  if (hintEl) control.setAttribute('aria-describedby', hintEl.id);
  const wrap = h('div', { class: 'field' }, h('label', { for: control.id }, label), control, hintEl);
  return wrap;
}

export function input(attrs = {}) {
  return h('input', { type: 'text', ...attrs });
}

export function checkbox(label, attrs = {}) {
  const box = h('input', { type: 'checkbox', ...attrs, id: attrs.id || `f${++seq}` });
  if (attrs.checked === false) box.checked = false;
  const wrap = h('div', { class: 'check' }, box, h('label', { for: box.id }, label));
  return { wrap, box };
}

export function select(options, attrs = {}) {
  return h('select', attrs, options.map(([value, text]) => h('option', { value }, text)));
}

/** The server's error as people should see it: message, code and any per-field problems. */
export function errorNode(e) {
  if (!(e instanceof ApiError)) return h('div', { class: 'banner error', role: 'alert' }, String(e && e.message ? e.message : e));
  const body = e.body && e.body.error ? e.body.error : {};
  const problems = Array.isArray(body.problems) ? body.problems : [];
  return h('div', { class: 'banner error', role: 'alert' },
    h('strong', {}, e.message), ' ', h('code', { class: 'errcode' }, e.code), e.status ? h('span', { class: 'muted' }, ` (HTTP ${e.status})`) : null,
    body.field ? h('div', {}, 'Field: ', h('code', {}, String(body.field))) : null,
    problems.length ? h('ul', { class: 'problems' }, problems.map((p) => h('li', {}, typeof p === 'string' ? p : [p.path || p.instancePath || p.field || '', ' ', p.message || JSON.stringify(p)].join('').trim()))) : null,
  );
}

/** A status/alert area: show(kind, text) or showError(e). */
export function statusArea(id) {
  const el = h('div', { class: 'status-area', id, 'aria-live': 'polite' });
  return {
    el,
    clear: () => clear(el),
    ok(text) { clear(el); el.append(h('div', { class: 'banner info', role: 'status' }, text)); },
    error(e) { clear(el); el.append(errorNode(e)); },
  };
}

/** Run an async action from a button/form: disables the button while it runs, reports errors. */
export async function act(button, status, fn) {
  if (button) button.disabled = true;
  status?.clear();
  try {
    return await fn();
  } catch (e) {
    if (status) status.error(e);
    else throw e;
    return undefined;
  } finally {
    if (button) button.disabled = false;
  }
}

/** A list from "a, b, c" (blank → null when nullable, else []). */
export function parseList(text, nullable = false) {
  const items = String(text || '').split(/[,\n]/).map((s) => s.trim()).filter(Boolean);
  if (!items.length) return nullable ? null : [];
  return items;
}

export function section(title, ...children) {
  const id = `s${++seq}`;
  return h('section', { class: 'panel', 'aria-labelledby': id }, h('h2', { id }, title), ...children);
}

export function pageTitle(text, intro) {
  return [h('h1', {}, text), intro ? h('p', { class: 'muted' }, intro) : null];
}

export function json(v) {
  return h('pre', {}, JSON.stringify(v, null, 2));
}

/**
 * A user field for the admin pages: type a username, e-mail or id. Suggestions come from
 * GET /api/admin/users as you type (a <datalist>: username, with id and e-mail beside it).
 * Returns { input, list, resolve }: resolve() → the user's id (null when empty and optional),
 * or throws a plain error when the text names nobody or more than one user. All digits = an id.
 */
export function userPicker(attrs = {}) {
  const listId = `${attrs.id}-options`;
  const el = input({ autocomplete: 'off', spellcheck: 'false', list: listId, placeholder: 'username, e-mail or id', ...attrs });
  const list = h('datalist', { id: listId });
  const search = (q, limit) => api('GET', `/api/admin/users?${new URLSearchParams({ q, limit: String(limit) })}`);
  let timer;
  let shown = null;
  const suggest = async () => {
    const q = el.value.trim();
    if (q === shown || /^[0-9]+$/.test(q)) return;
    try {
      const r = await search(q, 20);
      if (el.value.trim() !== q) return;
      shown = q;
      clear(list);
      for (const u of r.users) {
        const extra = [`id ${u.id}`, u.email, u.display_name, u.is_active ? null : 'inactive'].filter(Boolean).join(' · ');
        list.append(h('option', { value: u.username, label: extra }, extra));
      }
    } catch {
      // Suggestions are a convenience; the field still takes a username or an id.
    }
  };
  el.addEventListener('input', () => {
    el.removeAttribute('aria-invalid');
    clearTimeout(timer);
    timer = setTimeout(suggest, 150);
  });
  el.addEventListener('focus', suggest);
  const resolve = async () => {
    const v = el.value.trim();
    if (!v) {
      if (attrs.required) throw new Error('Name a user (username, e-mail or id).');
      return null;
    }
    if (/^[0-9]+$/.test(v)) return Number(v);
    const lc = v.toLowerCase();
    const r = await search(v, 200);
    const exact = r.users.filter((u) => u.username.toLowerCase() === lc || (u.email || '').toLowerCase() === lc);
    if (exact.length === 1) return exact[0].id;
    el.setAttribute('aria-invalid', 'true');
    if (exact.length > 1) throw new Error(`"${v}" names more than one user: type the id instead.`);
    throw new Error(`No user is named "${v}". Type a username, an e-mail or an id.`);
  };
  return { input: el, list, resolve };
}
