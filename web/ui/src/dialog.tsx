// A modal dialog for the chat page (share, keyboard shortcuts): a native <dialog> shown with
// showModal (the rest of the page is inert), focus kept inside it (Tab and Shift+Tab wrap), Esc
// closes it, and focus goes back to what opened it.
import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

const FOCUSABLE =
  'button:not([disabled]), a[href], input:not([type=hidden]):not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

export function Dialog(p: { id: string; title: string; open: boolean; onClose(): void; children: ComponentChildren }) {
  const ref = useRef<HTMLDialogElement>(null);
  const opener = useRef<Element | null>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (p.open && !d.open) {
      opener.current = document.activeElement;
      d.showModal();
      d.querySelector<HTMLElement>(FOCUSABLE)?.focus();
    } else if (!p.open && d.open) {
      d.close();
    }
  }, [p.open]);
  useEffect(() => {
    if (p.open) return;
    const back = opener.current;
    opener.current = null;
    if (back instanceof HTMLElement && back.isConnected) back.focus();
  }, [p.open]);
  const onKeyDown = (ev: KeyboardEvent) => {
    if (ev.key !== 'Tab') return;
    const all = Array.from(ref.current?.querySelectorAll<HTMLElement>(FOCUSABLE) ?? []).filter(
      (el) => el.offsetParent !== null,
    );
    if (!all.length) return;
    const first = all[0]!;
    const last = all[all.length - 1]!;
    if (ev.shiftKey && document.activeElement === first) {
      ev.preventDefault();
      last.focus();
    } else if (!ev.shiftKey && document.activeElement === last) {
      ev.preventDefault();
      first.focus();
    }
  };
  return (
    <dialog
      ref={ref}
      id={p.id}
      class="dialog"
      aria-labelledby={`${p.id}-title`}
      onKeyDown={onKeyDown}
      onCancel={(ev) => {
        ev.preventDefault();
        p.onClose();
      }}
    >
      <div class="dialog-head">
        <h2 id={`${p.id}-title`}>{p.title}</h2>
        <button type="button" class="secondary small dialog-close" onClick={p.onClose}>
          Close
        </button>
      </div>
      {p.open && p.children}
    </dialog>
  );
}
