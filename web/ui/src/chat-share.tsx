// Sharing a chat (docs/chat.md "Sharing a chat"): the owner's dialog (make a link, see that the
// chat is shared, stop sharing) and the read-only page a link opens (#/share/<token>): the turns
// as the link shows them, with no composer, no approvals to decide, no edit, regenerate or
// branch switch; charts and files come through the link's own routes (ShareToken).
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ShareCreated, SharedChat, ShareState } from '../../share-api.js';
import { api } from './api.js';
import { copyText, fromStored, Turn } from './chat-turn.js';
import { Dialog } from './dialog.js';
import { shownOf, ShownText, type Shown } from './error-text.js';
import { ProblemAlert } from './problem-alert.js';
import { ShareToken } from './share-token.js';

const fmt = (iso: string) => new Date(iso).toLocaleString();

/** The owner's share dialog for chat `sessionId`. */
export function ShareDialog(p: { sessionId: string; open: boolean; onClose(): void }) {
  const [state, setState] = useState<ShareState | null>(null);
  const [made, setMade] = useState<ShareCreated | null>(null);
  const [problem, setProblem] = useState<Shown | null>(null);
  const [working, setWorking] = useState(false);
  const copyRef = useRef<HTMLButtonElement>(null);
  const base = `/api/chat/sessions/${encodeURIComponent(p.sessionId)}/share`;
  useEffect(() => {
    if (!p.open) return;
    setMade(null);
    setProblem(null);
    api<ShareState>('GET', base).then(setState, (e: unknown) => setProblem(shownOf(e)));
  }, [p.open, p.sessionId]);
  const act = async (fn: () => Promise<void>) => {
    setWorking(true);
    setProblem(null);
    try {
      await fn();
    } catch (e) {
      setProblem(shownOf(e));
    } finally {
      setWorking(false);
    }
  };
  const create = () =>
    act(async () => {
      const r = await api<ShareCreated>('POST', base);
      setMade(r);
      setState({ shared: true, created_at: r.created_at });
    });
  const revoke = () =>
    act(async () => {
      await api('DELETE', base);
      setMade(null);
      setState({ shared: false, created_at: null });
    });
  return (
    <Dialog id="share-dialog" title="Share this chat" open={p.open} onClose={p.onClose}>
      <p class="muted">
        People of your organisation who sign in can read the chat as it is now, with its charts and files. Messages you
        send later are not shared. They cannot write in it.
      </p>
      <p id="share-status" role="status">
        {state === null ? 'Loading…' : state.shared ? `Shared since ${fmt(state.created_at!)}.` : 'Not shared.'}
      </p>
      {made && (
        <div class="share-link">
          <label for="share-url">Link (shown once: copy it now)</label>
          <input id="share-url" readOnly value={made.url} onFocus={(e) => (e.target as HTMLInputElement).select()} />
          <button
            type="button"
            ref={copyRef}
            id="share-copy"
            class="secondary small"
            onClick={() => void copyText(made.url, copyRef.current)}
          >
            Copy link
          </button>
        </div>
      )}
      <ProblemAlert problem={problem} />
      <div class="dialog-actions">
        <button type="button" id="share-create" disabled={working || state === null} onClick={() => void create()}>
          {state?.shared ? 'Make a new link (the old one stops working)' : 'Make a link'}
        </button>
        {state?.shared && (
          <button type="button" id="share-revoke" class="danger" disabled={working} onClick={() => void revoke()}>
            Stop sharing
          </button>
        )}
      </div>
    </Dialog>
  );
}

function SharedView({ token }: { token: string }) {
  const [chat, setChat] = useState<SharedChat | null>(null);
  const [problem, setProblem] = useState<Shown | null>(null);
  useEffect(() => {
    api<SharedChat>('GET', `/api/share/${encodeURIComponent(token)}`).then(setChat, (e: unknown) =>
      setProblem(shownOf(e)),
    );
  }, [token]);
  if (problem)
    return (
      <div class="panel shared" role="alert">
        <h1>Shared chat not found</h1>
        <p>The link is wrong or was revoked, or the chat is not shared with you.</p>
        <p class="muted">
          <ShownText s={problem} />
        </p>
        <a href="#/chat">Go to your chats</a>
      </div>
    );
  if (!chat) return <p class="muted">Loading…</p>;
  const turns = chat.turns.map(fromStored);
  return (
    <ShareToken.Provider value={token}>
      <section class="panel shared" aria-labelledby="shared-heading">
        <h1 id="shared-heading">{chat.title || 'Shared chat'}</h1>
        <p class="muted" id="shared-note">
          Shared by {chat.owner} on {fmt(chat.shared_at)}. Read-only: you see the chat as it was when the link was made.
        </p>
        <div class="transcript shared-transcript" role="log" aria-label="Shared conversation">
          {turns.length === 0 && <p class="muted">This chat had no answers when it was shared.</p>}
          {turns.map((t) => (
            <Turn
              key={t.id}
              t={t}
              last={false}
              busy
              onRegenerate={() => undefined}
              onEdit={() => undefined}
              onSwitch={() => undefined}
              onDecide={() => Promise.resolve()}
            />
          ))}
        </div>
      </section>
    </ShareToken.Provider>
  );
}

let root: HTMLElement | null = null;

/** Mount the read-only page for a #/share/<token> hash (main.tsx appends the returned element). */
export function sharePage(hash: string): HTMLElement {
  const token = decodeURIComponent(hash.slice('#/share/'.length).split('/')[0] ?? '');
  root ??= document.createElement('div');
  root.className = 'share-root';
  render(<SharedView key={token} token={token} />, root);
  return root;
}
