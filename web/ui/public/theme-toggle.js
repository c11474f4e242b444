// The header's colour-scheme switch: follows the system until the user picks light or dark.
import { h } from './lib.js';

const KEY = 'airlock-theme';

function effective() {
  const saved = document.documentElement.dataset.theme;
  if (saved === 'light' || saved === 'dark') return saved;
  return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

/** A button that switches between light and dark and remembers the choice. */
export function themeToggle() {
  const b = h('button', { type: 'button', class: 'secondary small theme-toggle', id: 'theme-toggle' });
  const label = () => {
    const dark = effective() === 'dark';
    b.textContent = 'Dark mode';
    b.setAttribute('aria-pressed', dark ? 'true' : 'false');
  };
  b.addEventListener('click', () => {
    const next = effective() === 'dark' ? 'light' : 'dark';
    document.documentElement.dataset.theme = next;
    try {
      localStorage.setItem(KEY, next);
    } catch {
      // Storage blocked: the choice lasts for this page only.
    }
    label();
  });
  label();
  return b;
}
