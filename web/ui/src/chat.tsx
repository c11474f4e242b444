// The chat page (Preact). app.js mounts it for #/chat and #/chat/<id>; everything it shows comes
// from /api/chat, typed by web/chat-api.ts. Its state and actions: chat-state.ts.
import { render, type JSX } from 'preact';
import { Turn } from './chat-turn.js';
import { AccountBox, groupSessions, SessionItem } from './chat-side.js';
import { AttachButton, FilePreview } from './chat-files.js';
import { ShownText } from './error-text.js';
import { ModelPicker } from './chat-model-picker.js';
import { ChatTools } from './chat-menu.js';
import { FeedbackButtons, useFeedback } from './chat-feedback.js';
import { useStickyScroll, type StickyScroll } from './chat-scroll.js';
import {
  turnActions,
  useChatState,
  useLoadChat,
  useSend,
  useSessions,
  type ChatState,
  type Sessions,
} from './chat-state.js';
import type { ChatHistory } from '../../chat-api.js';
import { api } from './api.js';

/* ---------- the page ---------- */

function ChatApp({ sessionId, nav }: { sessionId: string | null; nav: number }) {
  const st = useChatState(sessionId);
  const sessions = useSessions();
  const scroll = useStickyScroll(st.turns, st.input);
  useLoadChat(st, sessionId, nav, scroll, sessions);
  const send = useSend(st, scroll, sessions);
  const acts = turnActions(st);
  const sessionChanged = (id: string) => (deleted: boolean) => {
    sessions.reload();
    if (deleted && id === st.currentRef.current) location.hash = '#/chat';
    else if (!deleted && id === st.currentRef.current)
      api<ChatHistory>('GET', `/api/chat/sessions/${encodeURIComponent(id)}/messages`).then(
        (h) => st.setTitle(h.session.title),
        () => undefined,
      );
  };
  return (
    <div class={`chat${st.listOpen ? ' list-open' : ''}`}>
      <ChatList st={st} sessions={sessions} onChanged={sessionChanged} />
      <section class="panel pane" aria-labelledby="chat-heading">
        <PaneHead st={st} onStop={() => void acts.stop()} />
        <ModelPicker sessionId={st.current} chosen={st.modelId} onChosen={st.setModelId} busy={st.busy} />
        <Transcript st={st} scroll={scroll} send={send} acts={acts} />
        {!scroll.atBottom && (
          <button type="button" class="secondary small jump" id="jump-latest" onClick={scroll.jump}>
            Jump to latest ↓
          </button>
        )}
        <Composer st={st} send={send} onStop={() => void acts.stop()} />
      </section>
    </div>
  );
}

function ChatList({
  st,
  sessions,
  onChanged,
}: {
  st: ChatState;
  sessions: Sessions;
  onChanged(id: string): (deleted: boolean) => void;
}) {
  const { sessions: list, query } = sessions;
  return (
    <aside class="panel side" aria-label="Chats" id="chat-list-panel">
      <a class="button" id="new-session" href="#/chat" onClick={() => st.setListOpen(false)}>
        New chat
      </a>
      <button type="button" class="secondary small list-toggle" onClick={() => st.setListOpen(false)}>
        Back to the conversation
      </button>
      <h2>Chats</h2>
      <label class="visually-hidden" for="chat-search">
        Search chats
      </label>
      <input
        id="chat-search"
        type="search"
        placeholder="Search chats…"
        value={query}
        onInput={(e) => sessions.setQuery((e.target as HTMLInputElement).value)}
      />
      <ul class="sessions" id="session-list" aria-label="Chat sessions">
        {list === null ? null : list.length === 0 ? (
          <li class="muted">
            {query ? 'No chat matches your search.' : 'No chats yet: your conversations will be listed here.'}
          </li>
        ) : (
          groupSessions(list).map((g) => (
            <li key={g.name} class="session-group">
              <h3 class="session-group-name">{g.name}</h3>
              <ul class="sessions" aria-label={g.name}>
                {g.sessions.map((s) => (
                  <SessionItem key={s.id} s={s} current={s.id === st.current} onChanged={onChanged(s.id)} />
                ))}
              </ul>
            </li>
          ))
        )}
      </ul>
      <h2>Workspace account</h2>
      <AccountBox />
    </aside>
  );
}

function PaneHead({ st, onStop }: { st: ChatState; onStop(): void }) {
  const { current, title } = st;
  return (
    <div class="pane-head">
      <button
        type="button"
        class="secondary small list-toggle"
        aria-controls="chat-list-panel"
        aria-expanded={st.listOpen ? 'true' : 'false'}
        onClick={() => st.setListOpen(!st.listOpen)}
      >
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
      <ChatTools sessionId={current} onStop={onStop} onOpenList={() => st.setListOpen(true)} />
    </div>
  );
}

type Send = ReturnType<typeof useSend>;

function Transcript({
  st,
  scroll,
  send,
  acts,
}: {
  st: ChatState;
  scroll: StickyScroll;
  send: Send;
  acts: ReturnType<typeof turnActions>;
}) {
  const feedback = useFeedback(st.current);
  const { current, turns } = st;
  const last = turns[turns.length - 1];
  return (
    <div
      class="transcript"
      id="transcript"
      ref={scroll.transcript}
      onScroll={scroll.onScroll}
      onWheel={scroll.onWheel}
      onKeyDown={scroll.onKey}
      onTouchMove={scroll.leaveBottom}
      tabIndex={0}
      role="log"
      aria-label="Conversation"
      aria-live="polite"
    >
      {st.loadError && (
        <div class="banner error" role="alert">
          <ShownText s={st.loadError} />
        </div>
      )}
      {!current && !turns.length && (
        <p class="muted">
          Start a conversation. The agent can read your spreadsheets, draw charts and send mail for you.
        </p>
      )}
      {turns.map((t, i) => (
        <Turn
          key={t.id ?? `pending${i}`}
          t={t}
          sessionId={current}
          last={t === last}
          busy={st.busy}
          extra={
            current && t.id && !t.running ? (
              <FeedbackButtons
                sessionId={current}
                turnId={t.id}
                given={feedback.of(t.id)}
                onChange={(e) => feedback.put(t.id!, e)}
              />
            ) : null
          }
          onRegenerate={() => void send(t.prompt, t.id)}
          onSwitch={(id) => void acts.switchTo(id)}
          onDecide={acts.decide}
          onEdit={() => {
            st.setEditing(t.id);
            st.setDraft(t.prompt);
            st.input.current?.focus();
          }}
        />
      ))}
    </div>
  );
}

function Composer({ st, send, onStop }: { st: ChatState; send: Send; onStop(): void }) {
  const { editing, hint, attached, current, busy } = st;
  const cancelEdit = () => (st.setEditing(null), st.setDraft(''));
  const onKeyDown = (ev: KeyboardEvent) => {
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      void send(st.draft, editing);
    } else if (ev.key === 'Escape' && editing) cancelEdit();
  };
  return (
    <form
      class="composer"
      aria-label="Send a message"
      onSubmit={(ev) => {
        ev.preventDefault();
        void send(st.draft, editing);
      }}
    >
      {editing && (
        <div class="editing muted" role="status">
          Editing a message: sending starts a new version from there; the old one stays (‹ ›).{' '}
          <button type="button" class="link" onClick={cancelEdit}>
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
            <FilePreview
              key={a.file.name}
              preview={a.preview}
              sessionId={current}
              onRemove={() => st.setAttached((l) => l.filter((x) => x !== a))}
            />
          ))}
        </div>
      )}
      <div class="composer-row">
        <AttachButton
          sessionId={current}
          disabled={busy}
          onUploaded={(a) => st.setAttached((l) => [...l, a])}
          onError={(m) => st.setHint(m)}
        />
        <label for="prompt" class="visually-hidden">
          Message
        </label>
        <textarea
          id="prompt"
          name="prompt"
          ref={st.input}
          rows={2}
          placeholder="Ask the agent… e.g. “chart 3, 5, 2 and email the chart to someone@example.com”"
          value={st.draft}
          onInput={(e) => st.setDraft((e.target as HTMLTextAreaElement).value)}
          onKeyDown={onKeyDown}
          aria-describedby={hint ? 'composer-hint' : undefined}
        />
        {busy ? (
          <button type="button" id="stop" class="danger" onClick={onStop} disabled={!st.running?.id}>
            Stop
          </button>
        ) : (
          <button type="submit" id="send">
            Send
          </button>
        )}
      </div>
    </form>
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
