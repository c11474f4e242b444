// Feedback on answers (docs/chat.md "Feedback on answers"): thumbs up or down under a finished
// answer, with an optional note (at most 2,000 characters); pressing the chosen thumb again takes
// it back. One per user per turn; the route: web/feedback-routes.ts.
import { useCallback, useEffect, useState } from 'preact/hooks';
import type { FeedbackEntry, FeedbackList, FeedbackRating } from '../../share-api.js';
import { api } from './api.js';
import { shownOf, type Shown } from './error-text.js';
import { ProblemAlert } from './problem-alert.js';

export const MAX_NOTE_CHARS = 2000;

/** The user's feedback on the turns of chat `sessionId`, and a way to change what is shown. */
/**
 * A thumb as inline SVG in the text colour: emoji needed an emoji font, and a machine without one
 * drew empty boxes (issue 41). The outline is Lucide's thumbs-up (ISC licence); down is it turned over.
 */
function Thumb({ down }: { down?: boolean }) {
  return (
    <svg
      class={down ? 'thumb-icon down' : 'thumb-icon'}
      viewBox="0 0 24 24"
      width="18"
      height="18"
      aria-hidden="true"
      focusable="false"
      fill="none"
      stroke="currentColor"
      stroke-width="2"
      stroke-linecap="round"
      stroke-linejoin="round"
    >
      <path d="M7 10v12" />
      <path d="M15 5.88 14 10h5.83a2 2 0 0 1 1.92 2.56l-2.33 8A2 2 0 0 1 17.5 22H4a2 2 0 0 1-2-2v-8a2 2 0 0 1 2-2h2.76a2 2 0 0 0 1.79-1.11L12 2a3.13 3.13 0 0 1 3 3.88Z" />
    </svg>
  );
}

export function useFeedback(sessionId: string | null): {
  of(turnId: string): FeedbackEntry | undefined;
  put(turnId: string, e: FeedbackEntry | null): void;
} {
  const [given, setGiven] = useState<Record<string, FeedbackEntry>>({});
  useEffect(() => {
    setGiven({});
    if (!sessionId) return;
    let live = true;
    api<FeedbackList>('GET', `/api/chat/sessions/${encodeURIComponent(sessionId)}/feedback`).then(
      (r) => live && setGiven(Object.fromEntries(r.feedback.map((f) => [f.turn_id, f]))),
      () => undefined, // no feedback shown; the buttons still work
    );
    return () => {
      live = false;
    };
  }, [sessionId]);
  const of = useCallback((turnId: string) => given[turnId], [given]);
  const put = useCallback((turnId: string, e: FeedbackEntry | null) => {
    setGiven((g) => {
      const next = { ...g };
      if (e) next[turnId] = e;
      else delete next[turnId];
      return next;
    });
  }, []);
  return { of, put };
}

export function FeedbackButtons(p: {
  sessionId: string;
  turnId: string;
  given: FeedbackEntry | undefined;
  onChange(e: FeedbackEntry | null): void;
}) {
  const [noteOpen, setNoteOpen] = useState(false);
  const [note, setNote] = useState('');
  const [problem, setProblem] = useState<Shown | null>(null);
  const url = `/api/chat/sessions/${encodeURIComponent(p.sessionId)}/turns/${encodeURIComponent(p.turnId)}/feedback`;
  const save = async (rating: FeedbackRating | null, text?: string) => {
    setProblem(null);
    try {
      if (rating === null) {
        await api('DELETE', url);
        p.onChange(null);
        setNoteOpen(false);
      } else p.onChange(await api<FeedbackEntry>('PUT', url, { rating, ...(text ? { note: text } : {}) }));
    } catch (e) {
      setProblem(shownOf(e));
    }
  };
  const rate = (r: FeedbackRating) => {
    if (p.given?.rating === r) return void save(null);
    void save(r, p.given?.note ?? undefined);
    setNote(p.given?.note ?? '');
    setNoteOpen(true);
  };
  const pressed = (r: FeedbackRating) => (p.given?.rating === r ? 'true' : 'false');
  return (
    <span class="feedback" role="group" aria-label="Feedback on this answer">
      <button
        type="button"
        class="link thumb up"
        aria-pressed={pressed('up')}
        aria-label="Good answer"
        title="Good answer"
        onClick={() => rate('up')}
      >
        <Thumb />
      </button>
      <button
        type="button"
        class="link thumb down"
        aria-pressed={pressed('down')}
        aria-label="Bad answer"
        title="Bad answer"
        onClick={() => rate('down')}
      >
        <Thumb down />
      </button>
      {p.given && !noteOpen && (
        <button
          type="button"
          class="link feedback-note-open"
          onClick={() => (setNote(p.given?.note ?? ''), setNoteOpen(true))}
        >
          {p.given.note ? 'Edit note' : 'Add a note'}
        </button>
      )}
      {p.given && noteOpen && (
        <form
          class="feedback-note"
          onSubmit={(ev) => {
            ev.preventDefault();
            void save(p.given!.rating, note.trim()).then(() => setNoteOpen(false));
          }}
        >
          <label for={`note-${p.turnId}`} class="visually-hidden">
            Note on this answer (optional, at most 2,000 characters)
          </label>
          <textarea
            id={`note-${p.turnId}`}
            rows={2}
            maxLength={MAX_NOTE_CHARS}
            placeholder="What was good or wrong? (optional)"
            value={note}
            onInput={(e) => setNote((e.target as HTMLTextAreaElement).value)}
          />
          <button type="submit" class="secondary small">
            Save note
          </button>
          <button type="button" class="link" onClick={() => setNoteOpen(false)}>
            Close
          </button>
        </form>
      )}
      <ProblemAlert problem={problem} inline />
    </span>
  );
}
