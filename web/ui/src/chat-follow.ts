// Reading a turn's NDJSON stream into the chat page's view, reattaching when it breaks
// (docs/chat.md "Reconnecting"): the server keeps running the turn meanwhile.
import { ApiError, ndjson, openStream, StreamBroken } from './api.js';
import { applyEvent, type ViewTurn } from './chat-turn.js';

const RECONNECT_TRIES = 30;
const RECONNECT_DELAY_MS = 1000;

export type SetTurns = (fn: (list: ViewTurn[]) => ViewTurn[]) => void;

/** One followed turn: where it stands, and how to change it in the view. */
interface Followed {
  seq: number;
  turnId: string | null;
  ended: boolean;
  /** Change this turn in the view (matched by object until the server names it, then by id). */
  mutate(fn: (t: ViewTurn) => ViewTurn): void;
}

function followed(setTurns: SetTurns, turnKey: ViewTurn): Followed {
  let key = turnKey;
  const f: Followed = {
    seq: turnKey.seq,
    turnId: turnKey.id,
    ended: false,
    mutate: (fn) =>
      setTurns((list) =>
        list.map((t) => {
          if (t !== key && !(f.turnId !== null && t.id === f.turnId)) return t;
          key = fn(t);
          return key;
        }),
      ),
  };
  return f;
}

/** Read one stream to its end (or its break); the first answer also names the turn. */
async function readStream(f: Followed, sid: string, res: Response | null, signal: AbortSignal): Promise<void> {
  if (!res) {
    res = await openStream(
      `/api/chat/sessions/${encodeURIComponent(sid)}/turns/${encodeURIComponent(f.turnId!)}/events?after=${f.seq}`,
      { signal },
    );
    f.mutate((t) => ({ ...t, notice: undefined }));
  }
  if (!f.turnId) {
    const id = res.headers.get('x-chat-turn-id');
    if (id) f.mutate((t) => ({ ...t, id }));
    f.turnId = id;
  }
  for await (const e of ndjson(res.body!)) {
    if (signal.aborted) return;
    f.seq = Math.max(f.seq, e.seq);
    f.mutate((t) => applyEvent(t, e));
    if (e.type === 'done') f.ended = true;
  }
  if (!f.ended) throw new StreamBroken('the stream ended before done');
}

/** The stream could not be followed again: the turn shows as interrupted, with why. */
function giveUp(f: Followed, sid: string): void {
  f.mutate((t) => ({
    ...applyEvent(
      { ...t, seq: 0 },
      { type: 'done', seq: 1, session_id: sid, turn_id: t.id ?? '', stop_reason: 'error' },
    ),
    id: t.id,
    seq: t.seq,
    stopReason: 'interrupted',
    notice: undefined,
    error: {
      code: 'ERR_NETWORK',
      message:
        'The connection to the server dropped, so this turn may be incomplete. Reload the chat to see what was saved.',
    },
  }));
}

/**
 * Read a turn's stream into the view; when it breaks before `done`, reattach with
 * after=<last seq seen> until the turn ends (the server keeps running it meanwhile).
 */
export async function followTurn(
  setTurns: SetTurns,
  sid: string,
  first: Response | null,
  turnKey: ViewTurn,
  signal: AbortSignal,
): Promise<void> {
  const f = followed(setTurns, turnKey);
  let res = first;
  for (let attempt = 0; !f.ended && !signal.aborted;) {
    const seqBefore = f.seq;
    try {
      await readStream(f, sid, res, signal);
    } catch (err) {
      if (signal.aborted) return;
      // Events came before the break: the connection worked, so the tries start again.
      if (f.seq > seqBefore) attempt = 0;
      if (err instanceof ApiError && err.status < 500) {
        f.mutate((t) => ({
          ...t,
          running: false,
          notice: undefined,
          stopReason: 'error',
          error: { code: err.code, message: err.message },
        }));
        return;
      }
      if (++attempt > RECONNECT_TRIES || !f.turnId) return giveUp(f, sid);
      f.mutate((t) => ({ ...t, notice: 'Connection lost; reconnecting… The answer keeps going on the server.' }));
      await new Promise((r) => setTimeout(r, RECONNECT_DELAY_MS));
    } finally {
      res = null;
    }
  }
}
