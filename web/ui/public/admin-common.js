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
  // One problem is the message itself: list problems only when there are several.
  const problems = Array.isArray(body.problems) && body.problems.length > 1 ? body.problems : [];
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

// ---------------------------------------------------------------- focus across re-renders
// Pages re-read the server after a change and replace their DOM. Without care the focused
// control is thrown away with it (and a disabled button drops focus too), so a keyboard user
// lands on <body> after every create or delete. act() notes what had focus; swap() puts focus
// on the same control in the new DOM, or, when that control is gone (a deleted row), on the
// same row of the same table, else on the section's heading.

let pendingFocus = null;

/** How to find the focused control again in a fresh render. */
export function focusKey(el) {
  if (!el || el === document.body || el === document.documentElement) return null;
  const tr = el.closest('tbody tr');
  const tableEl = el.closest('table');
  const sectionEl = el.closest('section');
  return {
    // Generated ids (f12, s3) differ between renders; only ids a page chose are stable.
    id: el.id && !/^[fs][0-9]+$/.test(el.id) ? el.id : null,
    label: el.getAttribute('aria-label'),
    tag: el.tagName,
    text: (el.textContent || '').trim(),
    table: tableEl && tableEl.id ? tableEl.id : null,
    row: tr ? Array.from(tr.parentElement.children).indexOf(tr) : -1,
    section: sectionEl ? sectionEl.querySelector('h2')?.textContent : null,
  };
}

const FOCUSABLE = 'button:not([disabled]), a[href], input:not([type=hidden]):not([disabled]), select:not([disabled]), textarea:not([disabled]), summary';

function focusHeading(h2) {
  if (!h2) return false;
  if (!h2.hasAttribute('tabindex')) h2.setAttribute('tabindex', '-1');
  h2.focus();
  return true;
}

/** Focus the control `key` describes inside `root` (see focusKey); true when something got focus. */
export function restoreFocus(root, key) {
  if (!key || !root.isConnected) return false;
  const tryFocus = (el) => {
    if (!el) return false;
    el.focus();
    return document.activeElement === el;
  };
  if (key.id && tryFocus(root.querySelector(`#${CSS.escape(key.id)}`))) return true;
  if (key.label && tryFocus(Array.from(root.querySelectorAll('[aria-label]')).find((e) => e.getAttribute('aria-label') === key.label && e.matches(FOCUSABLE)))) return true;
  if (key.table) {
    const t = root.querySelector(`#${CSS.escape(key.table)}`);
    if (t) {
      const rows = Array.from(t.querySelectorAll('tbody tr')).filter((r) => r.querySelector(FOCUSABLE));
      const row = rows[Math.min(key.row, rows.length - 1)];
      if (row) {
        const same = Array.from(row.querySelectorAll(FOCUSABLE)).find((e) => (e.textContent || '').trim() === key.text);
        if (tryFocus(same || row.querySelector(FOCUSABLE))) return true;
      }
      if (focusHeading(t.closest('section')?.querySelector('h2'))) return true;
    }
  }
  if (key.section) {
    const sec = Array.from(root.querySelectorAll('section')).find((x) => x.querySelector('h2')?.textContent === key.section);
    const same = sec && Array.from(sec.querySelectorAll(FOCUSABLE)).find((e) => e.tagName === key.tag && (e.textContent || '').trim() === key.text);
    if (tryFocus(same)) return true;
    if (focusHeading(sec?.querySelector('h2'))) return true;
  }
  const h1 = root.querySelector('h1');
  if (h1) {
    if (!h1.hasAttribute('tabindex')) h1.setAttribute('tabindex', '-1');
    h1.focus();
    return true;
  }
  return false;
}

/** Replace `old` with `fresh` and keep the keyboard user's place (see focusKey). */
export function swap(old, fresh) {
  const key = pendingFocus ?? (old.contains(document.activeElement) ? focusKey(document.activeElement) : null);
  pendingFocus = null;
  old.replaceWith(fresh);
  if (key) restoreFocus(fresh, key);
  return fresh;
}

/** Run an async action from a button/form: disables the button while it runs, reports errors. */
export async function act(button, status, fn) {
  const focused = document.activeElement;
  pendingFocus = focusKey(focused);
  if (button) button.disabled = true;
  status?.clear();
  try {
    return await fn();
  } catch (e) {
    if (status) status.error(e);
    else throw e;
    return undefined;
  } finally {
    pendingFocus = null;
    if (button) button.disabled = false;
    // Disabling the focused button dropped focus to <body>: give it back.
    if (focused && focused.isConnected && (document.activeElement === document.body || !document.activeElement)) focused.focus();
  }
}

/** Long text in a cell: wraps, clamped to a few lines, the whole text as a tooltip. */
export function clip(text, cls = 'clip') {
  const s = text === null || text === undefined ? '' : String(text);
  return h('span', { class: cls, title: s }, s);
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
