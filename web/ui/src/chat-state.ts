// The chat page's state and what changes it: the chat list, the chat on screen (loaded from its
// history, its running turn followed), sending a message (new, edited or regenerated), switching a
// turn's version and stopping an answer. chat.tsx draws it.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type {
  ChatHistory,
  ChatSessionList,
  ChatSessionSummary,
  SendMessageRequest,
  UploadAnswer,
} from '../../chat-api.js';
import { api, ApiError, openStream } from './api.js';
import { attachedLine } from './chat-files.js';
import { waitForTitle } from './chat-title.js';
import { followTurn } from './chat-follow.js';
import type { StickyScroll } from './chat-scroll.js';
import { fromStored, type ViewTurn } from './chat-turn.js';
import { shownOf, type Shown } from './error-text.js';

/** The chat list and its search (debounced), reloaded after each turn. */
export function useSessions() {
  const [sessions, setSessions] = useState<ChatSessionSummary[] | null>(null);
  const [query, setQuery] = useState('');
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
  return { sessions, query, setQuery, loadSessions, reload: () => void loadSessions(query.trim()) };
}
export type Sessions = ReturnType<typeof useSessions>;

/** What the page shows of the chat on screen, and the message box. */
export function useChatState(sessionId: string | null) {
  const [current, setCurrent] = useState<string | null>(sessionId);
  const [turns, setTurns] = useState<ViewTurn[]>([]);
  const [title, setTitle] = useState<string>('');
  const [loadError, setLoadError] = useState<Shown | null>(null);
  const [draft, setDraft] = useState('');
  const [editing, setEditing] = useState<string | null>(null);
  const [hint, setHint] = useState<Shown | null>(null);
  /** The chat's model (its history says), or the one a new chat starts with (chat-model-picker.tsx). */
  const [modelId, setModelId] = useState<string | null>(null);
  const [listOpen, setListOpen] = useState(false);
  const [attached, setAttached] = useState<UploadAnswer[]>([]);
  const input = useRef<HTMLTextAreaElement>(null);
  /** Aborts the reader of the turn on screen (never the turn itself). */
  const reader = useRef<AbortController | null>(null);
  const currentRef = useRef(current);
  currentRef.current = current;
  const running = turns.find((t) => t.running);
  return {
    ...{
      current,
      setCurrent,
      currentRef,
      turns,
      setTurns,
      title,
      setTitle,
      loadError,
      setLoadError,
      draft,
      setDraft,
      editing,
      setEditing,
    },
    ...{
      hint,
      setHint,
      modelId,
      setModelId,
      listOpen,
      setListOpen,
      attached,
      setAttached,
      input,
      reader,
      running,
      busy: !!running,
    },
  };
}
export type ChatState = ReturnType<typeof useChatState>;

/** Load the chat named in the URL, and reattach to its running turn. */
export function useLoadChat(
  st: ChatState,
  sessionId: string | null,
  nav: number,
  scroll: StickyScroll,
  sessions: Sessions,
): void {
  useEffect(() => {
    if (sessionId === st.currentRef.current && st.turns.length) return;
    st.reader.current?.abort();
    st.setCurrent(sessionId);
    st.setTurns([]);
    st.setLoadError(null);
    st.setEditing(null);
    st.setListOpen(false);
    scroll.stick.current = true;
    if (!sessionId) {
      st.setTitle('');
      st.setModelId(null);
      return;
    }
    const ac = new AbortController();
    st.reader.current = ac;
    api<ChatHistory>('GET', `/api/chat/sessions/${encodeURIComponent(sessionId)}/messages`)
      .then((h) => {
        if (ac.signal.aborted) return;
        st.setTitle(h.session.title);
        st.setModelId(h.session.model_id ?? null);
        const view = h.turns.map(fromStored);
        const live = view.find((t) => t.running);
        if (live) {
          // Replay the running turn from its first event: the stored copy has no text yet.
          const fresh: ViewTurn = { ...live, parts: [], seq: 0 };
          view[view.indexOf(live)] = fresh;
          st.setTurns(view);
          void followTurn(st.setTurns, sessionId, null, fresh, ac.signal).then(() => void sessions.loadSessions(''));
        } else st.setTurns(view);
      })
      .catch((e: unknown) => st.setLoadError(shownOf(e)));
    return undefined;
    // Loaded again on a navigation only, not on each change of the state it reads.
  }, [sessionId, nav]);
  useEffect(() => () => st.reader.current?.abort(), []);
}

/** Why a message could not be sent (it stays in the box). */
function refusal(e: unknown): Shown {
  if (!(e instanceof ApiError)) return 'Could not reach the server: your message is kept here.';
  return e.code === 'ERR_SESSION_BUSY'
    ? 'An answer is still running in this chat: your message is kept here.'
    : shownOf(e);
}

/** The chat's history again (after an edit or a regenerate: the turn's versions). */
export function reloadHistory(st: ChatState, sid: string): void {
  api<ChatHistory>('GET', `/api/chat/sessions/${encodeURIComponent(sid)}/messages`).then(
    (h) => st.setTurns(h.turns.map(fromStored)),
    () => undefined,
  );
}

/** Send a message; `replaces`: the turn an edit or a regenerate starts a new version at. */
export function useSend(st: ChatState, scroll: StickyScroll, sessions: Sessions) {
  return async (message: string, replaces?: string | null) => {
    const text = (message.trim() + attachedLine(st.attached.map((a) => a.file.name))).trim();
    if (!text) return;
    if (st.busy)
      return st.setHint(
        'An answer is still running: your message is kept here. Send it when the answer ends, or stop the answer first.',
      );
    st.setHint(null);
    const sid = st.currentRef.current;
    const body: SendMessageRequest = {
      message: text,
      ...(sid ? { session_id: sid } : {}),
      ...(replaces ? { replaces_turn_id: replaces } : {}),
      ...(!sid && st.modelId ? { model_id: st.modelId } : {}),
    };
    const pending: ViewTurn = {
      id: null,
      prompt: text,
      startedAt: new Date().toISOString(),
      endedAt: null,
      parts: [],
      seq: 0,
      running: true,
    };
    const restoreDraft = st.draft;
    // An edit or a regenerate starts a new branch at that turn: what came after it leaves the screen.
    st.setTurns((list) => {
      const at = replaces ? list.findIndex((t) => t.id === replaces) : -1;
      return [...(at >= 0 ? list.slice(0, at) : list), pending];
    });
    st.setDraft('');
    st.setAttached([]);
    st.setEditing(null);
    scroll.stick.current = true;
    const ac = new AbortController();
    st.reader.current?.abort();
    st.reader.current = ac;
    let res: Response;
    try {
      res = await openStream('/api/chat/messages', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: ac.signal,
      });
    } catch (e) {
      // Refused or unreachable: nothing ran. The prompt goes back into the box, never lost.
      st.setTurns((list) => list.filter((t) => t !== pending));
      if (replaces && sid) reloadHistory(st, sid);
      st.setDraft(restoreDraft || text);
      return st.setHint(refusal(e));
    }
    const newSid = res.headers.get('x-chat-session-id');
    if (!sid && newSid)
      named(st, sessions, newSid, message.trim() || text.replace(/^Attached: /, '').replace(/uploads\//g, ''));
    await followTurn(st.setTurns, newSid ?? sid!, res, pending, ac.signal);
    // A new branch: fetch the turn's versions for its "< n/n >".
    if (replaces && !ac.signal.aborted) reloadHistory(st, newSid ?? sid!);
    if (!ac.signal.aborted) {
      sessions.reload();
      st.input.current?.focus();
    }
    // A new chat's title is made from its first exchange once the turn ended (chat-title.ts).
    if (!sid && newSid) void titled(st, sessions, newSid);
  };
}

async function titled(st: ChatState, sessions: Sessions, sid: string): Promise<void> {
  const made = await waitForTitle(sid);
  if (!made) return;
  void sessions.loadSessions('');
  if (st.currentRef.current === sid) st.setTitle(made.title);
}

/** The chat exists from the first byte: name it in the URL without reloading the page; its provisional title is the user's words (never the "Attached:" line). */
function named(st: ChatState, sessions: Sessions, newSid: string, text: string): void {
  st.setCurrent(newSid);
  st.currentRef.current = newSid;
  history.replaceState(null, '', `#/chat/${encodeURIComponent(newSid)}`);
  st.setTitle(text.replace(/\s+/g, ' ').slice(0, 80));
  void sessions.loadSessions('');
}

/** Show another version of a turn (its branch), as the server now has it; stop the running answer. */
export function turnActions(st: ChatState) {
  const switchTo = async (turnId: string) => {
    if (!st.current || st.busy) return;
    try {
      const h = await api<ChatHistory>('POST', `/api/chat/sessions/${encodeURIComponent(st.current)}/branch`, {
        turn_id: turnId,
      });
      st.setTurns(h.turns.map(fromStored));
    } catch (e) {
      st.setHint(e instanceof ApiError ? `${e.message} (${e.code})` : String(e));
    }
  };
  const stop = async () => {
    if (!st.running?.id || !st.current) return;
    try {
      await api(
        'POST',
        `/api/chat/sessions/${encodeURIComponent(st.current)}/turns/${encodeURIComponent(st.running.id)}/cancel`,
      );
    } catch (e) {
      st.setHint(shownOf(e));
    }
  };
  const decide = async (id: string, decision: 'approve' | 'deny', scope: 'once' | 'recipient') => {
    if (!st.current) return;
    await api('POST', `/api/chat/sessions/${encodeURIComponent(st.current)}/approvals/${encodeURIComponent(id)}`, {
      decision,
      scope,
    });
  };
  return { switchTo, stop, decide };
}
