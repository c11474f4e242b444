// Keyboard shortcuts of the chat page (docs/chat.md "Keyboard shortcuts") and their help dialog.
// Alt+Shift+letter (Option+Shift on a Mac) is taken by no browser for itself, and matched on the
// key's place (KeyN…), so it works whatever the keyboard layout or the character Alt makes.
// Help: `?` outside a text field, or Ctrl+/ anywhere.
import { useEffect, useRef } from 'preact/hooks';
import { Dialog } from './dialog.js';

export interface ShortcutActions {
  newChat(): void;
  search(): void;
  composer(): void;
  stop(): void;
  help(): void;
}

export const SHORTCUTS: readonly { keys: string[]; what: string; code?: string; action: keyof ShortcutActions }[] = [
  { keys: ['Alt', 'Shift', 'N'], what: 'New chat', code: 'KeyN', action: 'newChat' },
  { keys: ['Alt', 'Shift', 'S'], what: 'Search chats', code: 'KeyS', action: 'search' },
  { keys: ['Alt', 'Shift', 'C'], what: 'Go to the message box', code: 'KeyC', action: 'composer' },
  { keys: ['Alt', 'Shift', 'X'], what: 'Stop the answer', code: 'KeyX', action: 'stop' },
  { keys: ['?'], what: 'Show these shortcuts (outside a text field; Ctrl+/ anywhere)', action: 'help' },
];

function typing(el: EventTarget | null): boolean {
  return el instanceof HTMLElement && (el.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName));
}

/** Listen for the shortcuts while the chat page is shown. */
export function useShortcuts(actions: ShortcutActions): void {
  const ref = useRef(actions);
  ref.current = actions;
  useEffect(() => {
    const onKey = (ev: KeyboardEvent) => {
      if (ev.defaultPrevented || ev.isComposing) return;
      // Not while a dialog is open: its own keys (Esc) are its own.
      if (document.querySelector('dialog[open]')) return;
      let action: keyof ShortcutActions | undefined;
      if (ev.altKey && ev.shiftKey && !ev.ctrlKey && !ev.metaKey)
        action = SHORTCUTS.find((s) => s.code === ev.code)?.action;
      else if (ev.ctrlKey && !ev.altKey && !ev.metaKey && (ev.key === '/' || ev.code === 'Slash')) action = 'help';
      else if (ev.key === '?' && !ev.ctrlKey && !ev.altKey && !ev.metaKey && !typing(ev.target)) action = 'help';
      if (!action) return;
      ev.preventDefault();
      ref.current[action]();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);
}

export function ShortcutHelp(p: { open: boolean; onClose(): void }) {
  const mac = /Mac|iPhone|iPad/.test(navigator.platform);
  return (
    <Dialog id="shortcuts-dialog" title="Keyboard shortcuts" open={p.open} onClose={p.onClose}>
      <table class="shortcuts">
        <caption class="visually-hidden">Keyboard shortcuts of the chat page</caption>
        <thead>
          <tr>
            <th scope="col">Keys</th>
            <th scope="col">What it does</th>
          </tr>
        </thead>
        <tbody>
          {SHORTCUTS.map((s) => (
            <tr key={s.action}>
              <td>
                {s.keys.map((k, i) => (
                  <span key={k}>
                    {i > 0 && '+'}
                    <kbd>{mac && k === 'Alt' ? 'Option' : k}</kbd>
                  </span>
                ))}
              </td>
              <td>{s.what}</td>
            </tr>
          ))}
          <tr>
            <td>
              <kbd>Enter</kbd> / <kbd>Shift</kbd>+<kbd>Enter</kbd>
            </td>
            <td>Send the message / a new line in it</td>
          </tr>
          <tr>
            <td>
              <kbd>Esc</kbd>
            </td>
            <td>Close this dialog, or cancel an edit</td>
          </tr>
        </tbody>
      </table>
    </Dialog>
  );
}
