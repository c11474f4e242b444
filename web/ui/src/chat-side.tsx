// The chat page's side panel: one entry of the sessions list (rename, delete) and the workspace
// account box (connect / disconnect). chat.tsx owns the page and the list around them.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { ChatSessionSummary } from '../../chat-api.js';
import { api, ApiError } from './api.js';
import { fmt } from './chat-turn.js';
import { shownOf, ShownText, type Shown } from './error-text.js';
import { returnHere } from './return-here.js';

/* ---------- the sessions list ---------- */

/** The list's groups, in order: pinned chats, then by the day of their last use. */
const GROUPS = ['Pinned', 'Today', 'Yesterday', 'Previous 7 days', 'Previous 30 days', 'Older'] as const;

/** Which group a chat belongs in, by its last use against `now` (local days). */
export function groupOf(s: ChatSessionSummary, now = new Date()): (typeof GROUPS)[number] {
  if (s.pinned) return 'Pinned';
  const day = (d: Date) => new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
  const days = Math.round((day(now) - day(new Date(s.updated_at))) / 86_400_000);
  return days <= 0
    ? 'Today'
    : days === 1
      ? 'Yesterday'
      : days < 7
        ? 'Previous 7 days'
        : days < 30
          ? 'Previous 30 days'
          : 'Older';
}

/** A chat's last use in the list: the time only under Today (the group says the day), else date and time. */
export function listWhen(s: ChatSessionSummary, now = new Date()): string {
  const d = new Date(s.updated_at);
  if (Number.isNaN(d.getTime())) return s.updated_at;
  return !s.pinned && groupOf(s, now) === 'Today'
    ? d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
    : fmt(s.updated_at);
}

/** The chats grouped for the list (GROUPS order; empty groups left out), each group keeping the server's order. */
export function groupSessions(
  list: readonly ChatSessionSummary[],
  now = new Date(),
): { name: string; sessions: ChatSessionSummary[] }[] {
  return GROUPS.map((name) => ({ name, sessions: list.filter((s) => groupOf(s, now) === name) })).filter(
    (g) => g.sessions.length > 0,
  );
}

export function SessionItem(props: { s: ChatSessionSummary; current: boolean; onChanged(deleted: boolean): void }) {
  const { s } = props;
  const [editing, setEditing] = useState(false);
  const [title, setTitle] = useState(s.title);
  const [error, setError] = useState<string | null>(null);
  const renameRef = useRef<HTMLButtonElement>(null);
  const label = s.title || `Chat of ${fmt(s.created_at)}`;
  const save = async (ev: Event) => {
    ev.preventDefault();
    try {
      await api('PATCH', `/api/chat/sessions/${encodeURIComponent(s.id)}`, { title });
      setEditing(false);
      setError(null);
      props.onChanged(false);
      setTimeout(() => renameRef.current?.focus(), 0);
    } catch (e) {
      setError(e instanceof ApiError ? e.message : String(e));
    }
  };
  const pin = async () => {
    try {
      await api('PUT', `/api/chat/sessions/${encodeURIComponent(s.id)}/pin`, { pinned: !s.pinned });
      props.onChanged(false);
    } catch (e) {
      setError(e instanceof ApiError ? e.message : String(e));
    }
  };
  const remove = async () => {
    if (!confirm(`Delete the chat “${label}”? Its history is removed and its sandbox ends.`)) return;
    try {
      await api('DELETE', `/api/chat/sessions/${encodeURIComponent(s.id)}`);
      props.onChanged(true);
    } catch (e) {
      setError(e instanceof ApiError ? e.message : String(e));
    }
  };
  const cancel = () => {
    setEditing(false);
    setTitle(s.title);
  };
  if (editing)
    return <RenameForm id={s.id} title={title} setTitle={setTitle} save={save} cancel={cancel} error={error} />;
  return (
    <li class="session-item">
      <a
        class="session-link"
        href={`#/chat/${encodeURIComponent(s.id)}`}
        aria-current={props.current ? 'true' : undefined}
        title={label}
      >
        <span class="session-title">{label}</span>
        <span class="session-date muted">
          <time dateTime={s.updated_at} title={fmt(s.updated_at)}>
            {listWhen(s)}
          </time>
          {s.running_turn_id ? ' · answering…' : ''}
        </span>
      </a>
      <span class="session-actions">
        <button
          type="button"
          class="link pin"
          onClick={pin}
          aria-pressed={s.pinned ? 'true' : 'false'}
          aria-label={`${s.pinned ? 'Unpin' : 'Pin'} chat ${label}`}
        >
          {s.pinned ? 'Unpin' : 'Pin'}
        </button>
        <button
          type="button"
          class="link"
          ref={renameRef}
          onClick={() => setEditing(true)}
          aria-label={`Rename chat ${label}`}
        >
          Rename
        </button>
        <button type="button" class="link danger-link" onClick={remove} aria-label={`Delete chat ${label}`}>
          Delete
        </button>
      </span>
      <ItemError error={error} />
    </li>
  );
}

/** An error under a chat's entry (rename, pin, delete failed). */
function ItemError({ error }: { error: string | null }) {
  return error ? (
    <div class="error small-text" role="alert">
      {error}
    </div>
  ) : null;
}

/** A chat's entry while it is renamed: the title field (selected when it opens; Escape cancels), Save and Cancel. */
function RenameForm(props: {
  id: string;
  title: string;
  setTitle(t: string): void;
  save(ev: Event): Promise<void>;
  cancel(): void;
  error: string | null;
}) {
  const inputRef = useRef<HTMLInputElement>(null);
  useEffect(() => {
    inputRef.current?.select();
  }, []);
  return (
    <li>
      <form class="rename" onSubmit={props.save}>
        <label class="visually-hidden" for={`rename-${props.id}`}>
          New title
        </label>
        <input
          id={`rename-${props.id}`}
          ref={inputRef}
          value={props.title}
          maxLength={120}
          onInput={(e) => props.setTitle((e.target as HTMLInputElement).value)}
          onKeyDown={(e) => {
            if (e.key === 'Escape') props.cancel();
          }}
        />
        <button type="submit" class="small">
          Save
        </button>
        <button type="button" class="secondary small" onClick={props.cancel}>
          Cancel
        </button>
      </form>
      <ItemError error={props.error} />
    </li>
  );
}

/* ---------- the workspace account box (connect / disconnect) ---------- */

interface AccountInfo {
  connected: boolean;
  email?: string | null;
}

/** Where the account connect comes back to: this page and the chat open in it (never a new chat). */
export function AccountBox() {
  const [acc, setAcc] = useState<AccountInfo | null | 'unavailable'>(null);
  const [msg, setMsg] = useState<{ kind: 'error' | 'info'; text: Shown } | null>(null);
  const load = useCallback(() => api<AccountInfo>('GET', '/api/account').then(setAcc, () => setAcc('unavailable')), []);
  useEffect(() => void load(), [load]);
  const connect = async () => {
    try {
      const r = await api<{ authorization_url: string }>('POST', '/api/account/connect', { return_to: returnHere() });
      location.href = r.authorization_url;
    } catch (e) {
      setMsg({ kind: 'error', text: shownOf(e) });
    }
  };
  const disconnect = async () => {
    if (
      !confirm(
        "Disconnect your workspace account? Airlock forgets its tokens, asks Google to revoke them, and restarts your open chats' sandboxes.",
      )
    )
      return;
    try {
      const r = await api<{ revoked_at_provider?: boolean | null }>('DELETE', '/api/account');
      // The box shows the new state and the message together (never "Disconnected" beside Disconnect).
      await load();
      setMsg(
        r && r.revoked_at_provider === false
          ? {
              kind: 'error',
              text: 'Disconnected from Airlock, but Google did not confirm the revocation. To be sure, remove Airlock at https://myaccount.google.com/permissions.',
            }
          : {
              kind: 'info',
              text: r && r.revoked_at_provider ? "Disconnected. Google revoked Airlock's access." : 'Disconnected.',
            },
      );
    } catch (e) {
      setMsg({ kind: 'error', text: shownOf(e) });
    }
  };
  return (
    <div id="account">
      {acc === 'unavailable' && <p class="muted">Not available.</p>}
      {acc && acc !== 'unavailable' && acc.connected && (
        <>
          <p class="ok">Connected{acc.email ? ` as ${acc.email}` : ''}.</p>
          <button type="button" class="secondary" id="disconnect-account" onClick={disconnect}>
            Disconnect
          </button>
        </>
      )}
      {acc && acc !== 'unavailable' && !acc.connected && (
        <>
          <p class="muted">
            Not connected: mail and spreadsheet tools need it. After connecting, start a new chat so the tools can use
            it.
          </p>
          <button type="button" id="connect-account" onClick={connect}>
            Connect workspace account
          </button>
        </>
      )}
      {msg && (
        <div class={`banner ${msg.kind}`} role={msg.kind === 'error' ? 'alert' : 'status'}>
          <ShownText s={msg.text} />
        </div>
      )}
    </div>
  );
}
