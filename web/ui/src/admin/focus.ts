// Keyboard focus across changes. A page re-reads the server after a create or delete; the control
// that had focus may be gone (a deleted row) or was disabled while its call ran, and the browser
// then drops focus to <body>. focusKey() notes where focus was; restoreFocus() puts it on the same
// control, or on the same row of the same table, else on the section's heading, else the page's.

export interface FocusKey {
  id: string | null;
  label: string | null;
  tag: string;
  text: string;
  table: string | null;
  row: number;
  section: string | null;
}

const FOCUSABLE =
  'button:not([disabled]), a[href], input:not([type=hidden]):not([disabled]), select:not([disabled]), textarea:not([disabled]), summary';

/** How to find `el` again after the page changed; null for the body. */
export function focusKey(el: Element | null): FocusKey | null {
  if (!el || el === document.body || el === document.documentElement) return null;
  const tr = el.closest('tbody tr');
  const table = el.closest('table');
  const section = el.closest('section');
  return {
    id: el.id || null,
    label: el.getAttribute('aria-label'),
    tag: el.tagName,
    text: (el.textContent ?? '').trim(),
    table: table?.id || null,
    row: tr?.parentElement ? Array.from(tr.parentElement.children).indexOf(tr) : -1,
    section: section?.querySelector('h2')?.textContent ?? null,
  };
}

function tryFocus(el: Element | null | undefined): boolean {
  if (!(el instanceof HTMLElement)) return false;
  el.focus();
  return document.activeElement === el;
}

/** A heading gets focus only through script (tabindex -1). */
function focusHeading(h: Element | null | undefined): boolean {
  if (!(h instanceof HTMLElement)) return false;
  if (!h.hasAttribute('tabindex')) h.setAttribute('tabindex', '-1');
  return tryFocus(h);
}

const focusables = (root: Element): HTMLElement[] => Array.from(root.querySelectorAll<HTMLElement>(FOCUSABLE));

/** Focus what `key` describes inside `root`; true when something got focus. */
export function restoreFocus(root: Element, key: FocusKey | null): boolean {
  if (!key || !root.isConnected) return false;
  if (key.id && tryFocus(root.querySelector(`#${CSS.escape(key.id)}`))) return true;
  if (key.label && tryFocus(focusables(root).find((e) => e.getAttribute('aria-label') === key.label))) return true;
  if (key.table) {
    const t = root.querySelector(`#${CSS.escape(key.table)}`);
    if (t) {
      const rows = Array.from(t.querySelectorAll('tbody tr')).filter((r) => r.querySelector(FOCUSABLE));
      const row = rows[Math.min(key.row, rows.length - 1)];
      if (row) {
        const same = focusables(row).find((e) => (e.textContent ?? '').trim() === key.text);
        if (tryFocus(same ?? row.querySelector(FOCUSABLE))) return true;
      }
      if (focusHeading(t.closest('section')?.querySelector('h2'))) return true;
    }
  }
  if (key.section) {
    const sec = Array.from(root.querySelectorAll('section')).find(
      (s) => s.querySelector('h2')?.textContent === key.section,
    );
    if (sec) {
      const same = focusables(sec).find((e) => e.tagName === key.tag && (e.textContent ?? '').trim() === key.text);
      if (tryFocus(same) || focusHeading(sec.querySelector('h2'))) return true;
    }
  }
  return focusHeading(root.querySelector('h1'));
}

/** Focus is nowhere in particular (the body): the page should put it back. */
export const focusLost = (): boolean => !document.activeElement || document.activeElement === document.body;

/** After the pending render: Preact renders state changes in a microtask, so a task later it is done. */
export const rendered = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));
