// The chat's model (docs/chat.md "A model per chat"): a labelled <select> of the models on offer
// (GET /api/chat/models, as the user's agent policy allows them) under the chat heading, and a line
// naming the model that answers (the offline demo model badged as such). For a new chat the choice
// goes with its first message; in a chat it is switched at once (PATCH), never while a turn runs.
import type { Dispatch, StateUpdater } from 'preact/hooks';
import { useEffect, useState } from 'preact/hooks';
import type { ChatModelInfo, ChatModelList, ChatModelOption, ChatSessionInfo } from '../../chat-api.js';
import { api } from './api.js';
import { shownOf, ShownText, type Shown } from './error-text.js';

export interface ModelPickerProps {
  /** The chat shown (null: a new chat). */
  sessionId: string | null;
  /** The model chosen: the chat's (from its history), or the one a new chat will start with. */
  chosen: string | null;
  /** Sets the choice; the default is set as an update that keeps a choice made meanwhile. */
  onChosen: Dispatch<StateUpdater<string | null>>;
  /** A turn runs: switching waits until it ends. */
  busy: boolean;
}

/** What answers: the chat's model, else the one chosen for the new chat. */
function useModelInfo(
  sessionId: string | null,
  chosen: string | null,
  models: ChatModelOption[] | null,
): ChatModelInfo | null {
  const [info, setInfo] = useState<ChatModelInfo | null>(null);
  // An answer that comes back after the choice changed is dropped (it named the model chosen before).
  useEffect(() => {
    const q = sessionId ? `?session_id=${encodeURIComponent(sessionId)}` : '';
    const pick = !sessionId && chosen ? models?.find((m) => m.id === chosen) : undefined;
    let live = true;
    if (pick)
      setInfo({
        id: pick.id,
        label: pick.label,
        provider: pick.provider,
        model: pick.model,
        demo: pick.provider === 'demo',
        context_tokens: pick.context_tokens,
      });
    else
      api<ChatModelInfo>('GET', `/api/chat/model${q}`).then(
        (i) => live && setInfo(i),
        () => undefined,
      );
    return () => {
      live = false;
    };
  }, [sessionId, chosen, models]);
  return info;
}

export function ModelPicker({ sessionId, chosen, onChosen, busy }: ModelPickerProps) {
  const [models, setModels] = useState<ChatModelOption[] | null>(null);
  const [preferred, setPreferred] = useState<string | null>(null);
  const [problem, setProblem] = useState<Shown | null>(null);
  const [saving, setSaving] = useState(false);

  useEffect(() => {
    api<ChatModelList>('GET', '/api/chat/models').then(
      (l) => {
        setPreferred(l.preferred_id);
        setModels(l.models);
      },
      () => setModels([]),
    );
  }, []);
  // A new chat starts with the user's own default (Settings), else the server's (or the first model the user may use).
  // An effect runs after the paint that showed the list, so the user may have picked a model in
  // between: the default only fills an empty choice as it is then, never the stale `chosen` this
  // render saw (that race sent a new chat to the default model; test/browser/chat-edges.test.ts).
  useEffect(() => {
    if (sessionId || chosen || !models?.length) return;
    const fallback = (models.find((m) => m.id === preferred) ?? models.find((m) => m.default) ?? models[0]).id;
    onChosen((now) => now ?? fallback);
  }, [sessionId, chosen, models]);
  const info = useModelInfo(sessionId, chosen, models);

  const change = async (id: string) => {
    setProblem(null);
    if (!sessionId) return onChosen(id);
    setSaving(true);
    try {
      const s = await api<ChatSessionInfo>('PATCH', `/api/chat/sessions/${encodeURIComponent(sessionId)}`, {
        model_id: id,
      });
      onChosen(s.model_id ?? id);
    } catch (e) {
      setProblem(shownOf(e));
    } finally {
      setSaving(false);
    }
  };

  const list = models ?? [];
  // A chat on a model the user may no longer choose still shows it.
  const shown =
    chosen && !list.some((m) => m.id === chosen) && info?.id === chosen
      ? [
          ...list,
          {
            id: chosen,
            label: `${info.label} (not on offer)`,
            provider: info.provider as ChatModelOption['provider'],
            model: info.model,
            context_tokens: info.context_tokens,
            default: false,
          },
        ]
      : list;
  return (
    <div id="model" class="model-line muted" data-demo={info?.demo ? 'true' : undefined}>
      {shown.length > 0 && (
        <span class="model-picker">
          <label for="model-picker">Model</label>{' '}
          <select
            id="model-picker"
            value={chosen ?? ''}
            disabled={busy || saving}
            aria-describedby={busy ? 'model-busy' : undefined}
            onChange={(e) => void change((e.target as HTMLSelectElement).value)}
          >
            {shown.map((m) => (
              <option key={m.id} value={m.id}>
                {m.label}
                {m.default ? ' (default)' : ''}
              </option>
            ))}
          </select>
          {busy && (
            <span id="model-busy" class="visually-hidden">
              The model can be switched when the answer ends.
            </span>
          )}
        </span>
      )}{' '}
      {info?.demo ? (
        <>
          <span class="badge warning">Demo model</span> Offline and scripted, not a real AI model: try “chart the sample
          spreadsheet and email it to someone@example.com”.
        </>
      ) : info ? (
        <span class="model-name">
          <strong>{info.model || info.provider}</strong> ({info.provider})
        </span>
      ) : null}
      {problem && (
        <div class="banner error" role="alert">
          <ShownText s={problem} />
        </div>
      )}
    </div>
  );
}
