// Shared pieces for the admin pages: labelled fields, plain error boxes, small forms.
import { h, clear, ApiError } from './lib.js';

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
