// The chat page (Preact). app.js mounts it for #/chat and #/chat/<id>; everything it shows comes
// from /api/chat, typed by web/chat-api.ts.
import { render, type JSX } from 'preact';
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import type { ChatEvent, ChatHistory, ChatSessionList, ChatSessionSummary, SendMessageRequest, UploadAnswer } from '../../chat-api.js';
import { waitForTitle } from './chat-title.js';
import { api, ApiError, ndjson, openStream, StreamBroken } from './api.js';
import { fromStored, applyEvent, Turn, type ViewTurn } from './chat-turn.js';
import { AccountBox, groupSessions, SessionItem } from './chat-side.js';
import { AttachButton, attachedLine, FilePreview } from './chat-files.js';
import { shownOf, ShownText, type Shown } from './error-text.js';
import { ModelPicker } from './chat-model-picker.js';

/* ---------- the page ---------- */

const RECONNECT_TRIES = 30;
const RECONNECT_DELAY_MS = 1000;

function ChatApp({ sessionId, nav }: { sessionId: string | null; nav: number }) {
  const [current, setCurrent] = useState<string | null>(sessionId);
  const [turns, setTurns] = useState<ViewTurn[]>([]);
  const [title, setTitle] = useState<string>('');
  const [loadError, setLoadError] = useState<Shown | null>(null);
  const [sessions, setSessions] = useState<ChatSessionSummary[] | null>(null);
  const [query, setQuery] = useState('');
  const [draft, setDraft] = useState('');
  const [editing, setEditing] = useState<string | null>(null);
  const [hint, setHint] = useState<Shown | null>(null);
  /** The chat's model (its history says), or the one a new chat starts with (chat-model-picker.tsx). */
  const [modelId, setModelId] = useState<string | null>(null);
  const [listOpen, setListOpen] = useState(false);
  const [atBottom, setAtBottom] = useState(true);
  const [attached, setAttached] = useState<UploadAnswer[]>([]);
  const transcript = useRef<HTMLDivElement>(null);
  const input = useRef<HTMLTextAreaElement>(null);
  const stick = useRef(true);
  /** Aborts the reader of the turn on screen (never the turn itself). */
  const reader = useRef<AbortController | null>(null);
  const currentRef = useRef(current);
  currentRef.current = current;

  const running = turns.find((t) => t.running);
  const busy = !!running;

  const loadSessions = useCallback(async (q: string) => {
    try {
      const r = await api<ChatSessionList>('GET', `/api/chat/sessions${q ? `?q=${encodeURIComponent(q)}` : ''}`);
      setSessions(r.sessions);
    } catch {
      setSessions([]);
    }
  }, []);

  useEffect(() => {
    const id = setTimeout(() => void loadSessions(query.trim()), query ? 250 : 0);
    return () => clearTimeout(id);
  }, [query, loadSessions]);

  const update = useCallback((fn: (t: ViewTurn) => ViewTurn, match: (t: ViewTurn) => boolean) => {
    setTurns((list) => list.map((t) => (match(t) ? fn(t) : t)));
  }, []);

  /**
   * Read a turn's stream into the view; when it breaks before `done`, reattach with
   * after=<last seq seen> until the turn ends (the server keeps running it meanwhile).
   */
  const follow = useCallback(
    async (sid: string, first: Response | null, turnKey: ViewTurn, signal: AbortSignal) => {
      let seq = turnKey.seq;
      let turnId = turnKey.id;
      let res = first;
      let ended = false;
      let key = turnKey;
      /** Change this turn in the view (matched by object until the server names it, then by id). */
      const mutate = (fn: (t: ViewTurn) => ViewTurn) =>
        setTurns((list) =>
          list.map((t) => {
            if (t !== key && !(turnId !== null && t.id === turnId)) return t;
            key = fn(t);
            return key;
          }),
        );
      const apply = (e: ChatEvent) => {
        seq = Math.max(seq, e.seq);
        mutate((t) => applyEvent(t, e));
        if (e.type === 'done') ended = true;
      };
      for (let attempt = 0; !ended && !signal.aborted; ) {
        try {
          if (!res) {
            res = await openStream(`/api/chat/sessions/${encodeURIComponent(sid)}/turns/${encodeURIComponent(turnId!)}/events?after=${seq}`, { signal });
            mutate((t) => ({ ...t, notice: undefined }));
          }
          if (!turnId) {
            const id = res.headers.get('x-chat-turn-id');
            if (id) mutate((t) => ({ ...t, id }));
            turnId = id;
          }
          for await (const e of ndjson(res.body!)) {
            if (signal.aborted) return;
            apply(e);
            attempt = 0;
          }
          res = null;
          if (!ended) throw new StreamBroken('the stream ended before done');
        } catch (err) {
          res = null;
          if (signal.aborted) return;
          if (err instanceof ApiError && err.status < 500) {
            mutate((t) => ({ ...t, running: false, notice: undefined, stopReason: 'error', error: { code: err.code, message: err.message } }));
            return;
          }
          if (++attempt > RECONNECT_TRIES || !turnId) {
            mutate((t) => ({
              ...applyEvent({ ...t, seq: 0 }, { type: 'done', seq: 1, session_id: sid, turn_id: t.id ?? '', stop_reason: 'error' }),
              id: t.id,
              seq: t.seq,
              stopReason: 'interrupted',
              notice: undefined,
              error: { code: 'ERR_NETWORK', message: 'The connection to the server dropped, so this turn may be incomplete. Reload the chat to see what was saved.' },
            }));
            return;
          }
          mutate((t) => ({ ...t, notice: 'Connection lost; reconnecting… The answer keeps going on the server.' }));
          await new Promise((r) => setTimeout(r, RECONNECT_DELAY_MS));
        }
      }
    },
    [update],
  );

  // Load the chat named in the URL, and reattach to its running turn.
  useEffect(() => {
    if (sessionId === currentRef.current && turns.length) return;
    reader.current?.abort();
    setCurrent(sessionId);
    setTurns([]);
    setLoadError(null);
    setEditing(null);
    setListOpen(false);
    stick.current = true;
    if (!sessionId) {
      setTitle('');
      setModelId(null);
      return;
    }
    const ac = new AbortController();
    reader.current = ac;
    api<ChatHistory>('GET', `/api/chat/sessions/${encodeURIComponent(sessionId)}/messages`)
      .then((h) => {
        if (ac.signal.aborted) return;
        setTitle(h.session.title);
        setModelId(h.session.model_id ?? null);
        const view = h.turns.map(fromStored);
        const live = view.find((t) => t.running);
        if (live) {
          // Replay the running turn from its first event: the stored copy has no text yet.
          const fresh: ViewTurn = { ...live, parts: [], seq: 0 };
          view[view.indexOf(live)] = fresh;
          setTurns(view);
          void follow(sessionId, null, fresh, ac.signal).then(() => void loadSessions(''));
        } else setTurns(view);
      })
      .catch((e: unknown) => setLoadError(shownOf(e)));
    return undefined;
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [sessionId, nav]);

  useEffect(() => () => reader.current?.abort(), []);

  // Keep the newest content in view unless the reader scrolled up: when the turns change, and when
  // what is shown grows or the transcript shrinks after it rendered (a font or chart image that
  // loads late, a phone's viewport settling), which no render announces.
  const grown = useRef<ResizeObserver | null>(null);
  useLayoutEffect(() => {
    const el = transcript.current;
    if (!el) return;
    if (stick.current) el.scrollTop = el.scrollHeight;
    if (typeof ResizeObserver === 'undefined') return;
    grown.current ??= new ResizeObserver(() => {
      if (stick.current) el.scrollTop = el.scrollHeight;
    });
    // What is shown now, not turns that left (another chat opened): observed anew each time.
    grown.current.disconnect();
    for (const c of [el, ...Array.from(el.children)]) grown.current.observe(c);
  }, [turns]);
  useEffect(() => () => grown.current?.disconnect(), []);

  const lastTop = useRef(0);
  const onScroll = () => {
    const el = transcript.current;
    if (!el) return;
    const bottom = el.scrollHeight - el.scrollTop - el.clientHeight < 48;
    // Reaching the bottom follows again; only a move up leaves it (a scrollbar drag has no other
    // sign than this). Content that grew below since this event was queued is no move: the
    // newest stays pinned, and the observer above scrolls to it.
    if (bottom) stick.current = true;
    else if (el.scrollTop < lastTop.current) stick.current = false;
    lastTop.current = el.scrollTop;
    setAtBottom(bottom || stick.current);
  };
  /** The reader moves up (wheel, keys, touch): stop following at once, before any scroll event. */
  const leaveBottom = () => {
    stick.current = false;
    setAtBottom(false);
  };
  const onWheel = (ev: WheelEvent) => {
    if (ev.deltaY < 0) leaveBottom();
  };
  const onTranscriptKey = (ev: KeyboardEvent) => {
    if (['PageUp', 'ArrowUp', 'Home'].includes(ev.key)) leaveBottom();
  };
  const jump = () => {
    const el = transcript.current;
    if (!el) return;
    stick.current = true;
    el.scrollTop = el.scrollHeight;
    setAtBottom(true);
    input.current?.focus();
  };

  const send = async (message: string, replaces?: string | null) => {
    const text = (message.trim() + attachedLine(attached.map((a) => a.file.name))).trim();
    if (!text) return;
    if (busy) {
      setHint('An answer is still running: your message is kept here. Send it when the answer ends, or stop the answer first.');
      return;
    }
    setHint(null);
    const sid = currentRef.current;
    const body: SendMessageRequest = { message: text };
    if (sid) body.session_id = sid;
    if (replaces) body.replaces_turn_id = replaces;
    if (!sid && modelId) body.model_id = modelId;
    const pending: ViewTurn = { id: null, prompt: text, startedAt: new Date().toISOString(), endedAt: null, parts: [], seq: 0, running: true };
    const restoreDraft = draft;
    // An edit or a regenerate starts a new branch at that turn: what came after it leaves the screen.
    setTurns((list) => {
      const at = replaces ? list.findIndex((t) => t.id === replaces) : -1;
      return [...(at >= 0 ? list.slice(0, at) : list), pending];
    });
    setDraft('');
    setAttached([]);
    setEditing(null);
    stick.current = true;
    const ac = new AbortController();
    reader.current?.abort();
    reader.current = ac;
    let res: Response;
    try {
      res = await openStream('/api/chat/messages', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: ac.signal });
    } catch (e) {
      // Refused or unreachable: nothing ran. The prompt goes back into the box, never lost.
      setTurns((list) => list.filter((t) => t !== pending));
      if (replaces && sid) reloadHistory(sid);
      setDraft(restoreDraft || text);
      setHint(e instanceof ApiError ? (e.code === 'ERR_SESSION_BUSY' ? 'An answer is still running in this chat: your message is kept here.' : shownOf(e)) : 'Could not reach the server: your message is kept here.');
      return;
    }
    const newSid = res.headers.get('x-chat-session-id');
    if (!sid && newSid) {
      // The chat exists from the first byte: name it in the URL without reloading the page.
      setCurrent(newSid);
      currentRef.current = newSid;
      history.replaceState(null, '', `#/chat/${encodeURIComponent(newSid)}`);
      setTitle(text.replace(/\s+/g, ' ').slice(0, 80));
      void loadSessions('');
    }
    await follow(newSid ?? sid!, res, pending, ac.signal);
    // A new branch: fetch the turn's versions for its "< n/n >".
    if (replaces && !ac.signal.aborted) reloadHistory(newSid ?? sid!);
    if (!ac.signal.aborted) {
      void loadSessions(query.trim());
      input.current?.focus();
    }
    // A new chat's title is made from its first exchange once the turn ended (chat-title.ts).
    if (!sid && newSid)
      void waitForTitle(newSid).then((made) => {
        if (!made) return;
        void loadSessions('');
        if (currentRef.current === newSid) setTitle(made.title);
      });
  };

  const reloadHistory = (sid: string) => {
    api<ChatHistory>('GET', `/api/chat/sessions/${encodeURIComponent(sid)}/messages`).then((h) => setTurns(h.turns.map(fromStored)), () => undefined);
  };

  /** Show another version of a turn (its branch), as the server now has it. */
  const switchTo = async (turnId: string) => {
    if (!current || busy) return;
    try {
      const h = await api<ChatHistory>('POST', `/api/chat/sessions/${encodeURIComponent(current)}/branch`, { turn_id: turnId });
      setTurns(h.turns.map(fromStored));
    } catch (e) {
      setHint(e instanceof ApiError ? `${e.message} (${e.code})` : String(e));
    }
  };

  const stop = async () => {
    if (!running?.id || !current) return;
    try {
      await api('POST', `/api/chat/sessions/${encodeURIComponent(current)}/turns/${encodeURIComponent(running.id)}/cancel`);
    } catch (e) {
      setHint(shownOf(e));
    }
  };

  const last = turns[turns.length - 1];
  const onSubmit = (ev: Event) => {
    ev.preventDefault();
    void send(draft, editing);
  };
  const onKeyDown = (ev: KeyboardEvent) => {
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      void send(draft, editing);
    } else if (ev.key === 'Escape' && editing) {
      setEditing(null);
      setDraft('');
    }
  };

  const sessionChanged = (id: string) => (deleted: boolean) => {
    void loadSessions(query.trim());
    if (deleted && id === currentRef.current) location.hash = '#/chat';
    else if (!deleted && id === currentRef.current) api<ChatHistory>('GET', `/api/chat/sessions/${encodeURIComponent(id)}/messages`).then((h) => setTitle(h.session.title), () => undefined);
  };

  return (
    <div class={`chat${listOpen ? ' list-open' : ''}`}>
      <aside class="panel side" aria-label="Chats" id="chat-list-panel">
        <a class="button" id="new-session" href="#/chat" onClick={() => setListOpen(false)}>
          New chat
        </a>
        <button type="button" class="secondary small list-toggle" onClick={() => setListOpen(false)}>
          Back to the conversation
        </button>
        <h2>Chats</h2>
        <label class="visually-hidden" for="chat-search">
          Search chats
        </label>
        <input id="chat-search" type="search" placeholder="Search chats…" value={query} onInput={(e) => setQuery((e.target as HTMLInputElement).value)} />
        <ul class="sessions" id="session-list" aria-label="Chat sessions">
          {sessions === null ? null : sessions.length === 0 ? (
            <li class="muted">{query ? 'No chat matches your search.' : 'No chats yet: your conversations will be listed here.'}</li>
          ) : (
            groupSessions(sessions).map((g) => (
              <li key={g.name} class="session-group">
                <h3 class="session-group-name">{g.name}</h3>
                <ul class="sessions" aria-label={g.name}>
                  {g.sessions.map((s) => (
                    <SessionItem key={s.id} s={s} current={s.id === current} onChanged={sessionChanged(s.id)} />
                  ))}
                </ul>
              </li>
            ))
          )}
        </ul>
        <h2>Workspace account</h2>
        <AccountBox />
      </aside>
      <section class="panel pane" aria-labelledby="chat-heading">
        <div class="pane-head">
          <button type="button" class="secondary small list-toggle" aria-controls="chat-list-panel" aria-expanded={listOpen ? 'true' : 'false'} onClick={() => setListOpen(!listOpen)}>
            Chats
          </button>
          <h1 id="chat-heading" title={title || undefined}>
            {current ? title || 'Chat' : 'New chat'}
          </h1>
          {current && (
            <span class="export-links">
              Export:{' '}
              <a href={`/api/chat/sessions/${encodeURIComponent(current)}/export?format=markdown`} download id="export-md">
                Markdown
              </a>{' '}
              <a href={`/api/chat/sessions/${encodeURIComponent(current)}/export?format=json`} download id="export-json">
                JSON
              </a>
            </span>
          )}
        </div>
        <ModelPicker sessionId={current} chosen={modelId} onChosen={setModelId} busy={busy} />
        <div class="transcript" id="transcript" ref={transcript} onScroll={onScroll} onWheel={onWheel} onKeyDown={onTranscriptKey} onTouchMove={leaveBottom} tabIndex={0} role="log" aria-label="Conversation" aria-live="polite">
          {loadError && (
            <div class="banner error" role="alert">
              <ShownText s={loadError} />
            </div>
          )}
          {!current && !turns.length && <p class="muted">Start a conversation. The agent can read your spreadsheets, draw charts and send mail for you.</p>}
          {turns.map((t, i) => (
            <Turn
              key={t.id ?? `pending${i}`}
              t={t}
              sessionId={current}
              last={t === last}
              busy={busy}
              onRegenerate={() => void send(t.prompt, t.id)}
              onSwitch={(id) => void switchTo(id)}
              onDecide={async (id, decision, scope) => {
                if (!current) return;
                await api('POST', `/api/chat/sessions/${encodeURIComponent(current)}/approvals/${encodeURIComponent(id)}`, { decision, scope });
              }}
              onEdit={() => {
                setEditing(t.id);
                setDraft(t.prompt);
                input.current?.focus();
              }}
            />
          ))}
        </div>
        {!atBottom && (
          <button type="button" class="secondary small jump" id="jump-latest" onClick={jump}>
            Jump to latest ↓
          </button>
        )}
        <form class="composer" aria-label="Send a message" onSubmit={onSubmit}>
          {editing && (
            <div class="editing muted" role="status">
              Editing a message: sending starts a new version from there; the old one stays (‹ ›).{' '}
              <button type="button" class="link" onClick={() => (setEditing(null), setDraft(''))}>
                Cancel edit
              </button>
            </div>
          )}
          {hint && (
            <div class="banner info hint-busy" role="status" id="composer-hint">
              <ShownText s={hint} />
            </div>
          )}
          {attached.length > 0 && (
            <div class="attached" aria-label="Attached files">
              {attached.map((a) => (
                <FilePreview key={a.file.name} preview={a.preview} sessionId={current} onRemove={() => setAttached((l) => l.filter((x) => x !== a))} />
              ))}
            </div>
          )}
          <div class="composer-row">
            <AttachButton sessionId={current} disabled={busy} onUploaded={(a) => setAttached((l) => [...l, a])} onError={(m) => setHint(m)} />
            <label for="prompt" class="visually-hidden">
              Message
            </label>
            <textarea
              id="prompt"
              name="prompt"
              ref={input}
              rows={2}
              placeholder="Ask the agent… e.g. “chart 3, 5, 2 and email the chart to someone@example.com”"
              value={draft}
              onInput={(e) => setDraft((e.target as HTMLTextAreaElement).value)}
              onKeyDown={onKeyDown}
              aria-describedby={hint ? 'composer-hint' : undefined}
            />
            {busy ? (
              <button type="button" id="stop" class="danger" onClick={() => void stop()} disabled={!running?.id}>
                Stop
              </button>
            ) : (
              <button type="submit" id="send">
                Send
              </button>
            )}
          </div>
        </form>
      </section>
    </div>
  );
}

let root: HTMLElement | null = null;
/**
 * Counts navigations: after a new chat's first answer the page names the chat in the URL with
 * replaceState (no navigation), so going to #/chat again must still reset the page even though
 * the session id it is given (null) is the one it was first given.
 */
let navigations = 0;

/** Mount (or update) the chat page for a #/chat… hash; app.js appends the returned element. */
export async function chatPage(hash: string): Promise<HTMLElement> {
  const m = /^#\/chat\/([^/]+)/.exec(hash);
  const id = m ? decodeURIComponent(m[1]) : null;
  root ??= document.createElement('div');
  root.className = 'chat-root';
  render(<ChatApp sessionId={id} nav={++navigations} />, root);
  return root;
}

export type { JSX };
