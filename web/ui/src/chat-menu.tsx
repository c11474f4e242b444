// The chat page's tools in its header row: Share and Keyboard shortcuts (each a dialog), the
// keyboard shortcuts themselves, and on a phone (≤ 720 px) one Menu that holds what the page's
// header and toolbars show on a wide screen (the site navigation, the model, export, share,
// shortcuts, dark mode, log out), so the conversation starts within 64 px of the top
// (docs/chat.md "On a phone").
import { useEffect, useRef, useState } from 'preact/hooks';
import { ShareDialog } from './chat-share.js';
import { ShortcutHelp, useShortcuts } from './chat-shortcuts.js';

/** Focus an element once the page has drawn (a drawer that opens first). */
function focusSoon(selector: string): void {
  requestAnimationFrame(() => document.querySelector<HTMLElement>(selector)?.focus());
}

/** The site header's links, read when the menu opens (main.tsx draws them for this user). */
function headerLinks(): { href: string; text: string }[] {
  return Array.from(document.querySelectorAll<HTMLAnchorElement>('#nav a')).map((a) => ({
    href: a.getAttribute('href') ?? '#/chat',
    text: a.textContent ?? '',
  }));
}

export function ChatTools(p: { sessionId: string | null; onStop(): void; onOpenList(): void }) {
  const [share, setShare] = useState(false);
  const [help, setHelp] = useState(false);
  useShortcuts({
    newChat: () => {
      location.hash = '#/chat';
      focusSoon('#prompt');
    },
    search: () => {
      p.onOpenList();
      focusSoon('#chat-search');
    },
    composer: () => document.getElementById('prompt')?.focus(),
    stop: p.onStop,
    help: () => setHelp(true),
  });
  return (
    <>
      {p.sessionId && (
        <button type="button" class="secondary small wide-only" id="share-open" onClick={() => setShare(true)}>
          Share
        </button>
      )}
      <button
        type="button"
        class="secondary small wide-only"
        id="shortcuts-open"
        aria-label="Keyboard shortcuts"
        title="Keyboard shortcuts (?)"
        onClick={() => setHelp(true)}
      >
        ?
      </button>
      <PhoneMenu sessionId={p.sessionId} onShare={() => setShare(true)} onHelp={() => setHelp(true)} />
      {p.sessionId && <ShareDialog sessionId={p.sessionId} open={share} onClose={() => setShare(false)} />}
      <ShortcutHelp open={help} onClose={() => setHelp(false)} />
    </>
  );
}

function PhoneMenu(p: { sessionId: string | null; onShare(): void; onHelp(): void }) {
  const [open, setOpen] = useState(false);
  const [model, setModel] = useState(false);
  const button = useRef<HTMLButtonElement>(null);
  const panel = useRef<HTMLDivElement>(null);
  useEffect(() => {
    document.body.classList.toggle('model-open', model);
    return () => document.body.classList.remove('model-open');
  }, [model]);
  useEffect(() => {
    if (!open) return;
    panel.current?.querySelector<HTMLElement>('a, button')?.focus();
    const away = (ev: Event) => {
      if (!panel.current?.contains(ev.target as Node) && ev.target !== button.current) setOpen(false);
    };
    document.addEventListener('pointerdown', away);
    return () => document.removeEventListener('pointerdown', away);
  }, [open]);
  const close = (then?: () => void) => {
    setOpen(false);
    button.current?.focus();
    then?.();
  };
  const onKeyDown = (ev: KeyboardEvent) => {
    if (ev.key === 'Escape') {
      ev.preventDefault();
      close();
    }
  };
  /** A header control (theme, log out) pressed for the user: the same code, the same behaviour. */
  const press = (id: string) => close(() => document.getElementById(id)?.click());
  const dark = document.getElementById('theme-toggle')?.getAttribute('aria-pressed') === 'true';
  return (
    <div class="phone-menu phone-only" onKeyDown={onKeyDown}>
      <button
        type="button"
        ref={button}
        class="secondary small"
        id="chat-menu-button"
        aria-expanded={open ? 'true' : 'false'}
        aria-controls="chat-menu"
        onClick={() => setOpen(!open)}
      >
        Menu
      </button>
      <div id="chat-menu" class="chat-menu" ref={panel} hidden={!open}>
        {open && (
          <MenuItems
            sessionId={p.sessionId}
            model={model}
            dark={dark}
            onClose={close}
            onModel={() => setModel(!model)}
            onShare={p.onShare}
            onHelp={p.onHelp}
            onPress={press}
          />
        )}
      </div>
    </div>
  );
}

function MenuItems(p: {
  sessionId: string | null;
  model: boolean;
  dark: boolean;
  onClose(then?: () => void): void;
  onModel(): void;
  onShare(): void;
  onHelp(): void;
  onPress(id: string): void;
}) {
  const sid = p.sessionId ? encodeURIComponent(p.sessionId) : null;
  return (
    <ul aria-label="Menu">
      {headerLinks().map((l) => (
        <li key={l.href}>
          <a href={l.href} onClick={() => p.onClose()}>
            {l.text}
          </a>
        </li>
      ))}
      <li>
        <button
          type="button"
          class="link"
          id="menu-model"
          aria-pressed={p.model ? 'true' : 'false'}
          onClick={() => p.onClose(p.onModel)}
        >
          Model
        </button>
      </li>
      {sid && (
        <>
          <li>
            <button type="button" class="link" id="menu-share" onClick={() => p.onClose(p.onShare)}>
              Share…
            </button>
          </li>
          <li>
            <a href={`/api/chat/sessions/${sid}/export?format=markdown`} download>
              Export as Markdown
            </a>
          </li>
          <li>
            <a href={`/api/chat/sessions/${sid}/export?format=json`} download>
              Export as JSON
            </a>
          </li>
        </>
      )}
      <li>
        <button type="button" class="link" id="menu-shortcuts" onClick={() => p.onClose(p.onHelp)}>
          Keyboard shortcuts
        </button>
      </li>
      <li>
        <button
          type="button"
          class="link"
          id="menu-theme"
          aria-pressed={p.dark ? 'true' : 'false'}
          onClick={() => p.onPress('theme-toggle')}
        >
          Dark mode
        </button>
      </li>
      <li>
        <button type="button" class="link" id="menu-logout" onClick={() => p.onPress('logout')}>
          Log out
        </button>
      </li>
    </ul>
  );
}
