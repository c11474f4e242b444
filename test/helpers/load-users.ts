/**
 * Simulated users for the load, chaos and soak runs (docs/capacity.md), through the real web API
 * only: login, new chats, NDJSON turns (some with a tool call, some with a mail send), think time,
 * then the chat's history read back and checked, then the chat deleted. A stream cut by a dying
 * node is followed again through GET …/turns/{id}/events (on the other node of a fleet when its
 * own is gone) until its one `done`; a turn with no `done` within the bound is hung.
 */
import { nowMs } from '../../bench/lib.js';
import { Client, ndjsonObjects } from './client.js';
import { PROMPT_TAG, type Rig } from './load-rig.js';

export interface TurnRecord {
  user: string;
  chat: string;
  k: number;
  start: number;
  firstMs?: number;
  endMs?: number;
  outcome: 'done' | 'refused' | 'hung';
  stopReason?: string;
  code?: string;
  /** The stream broke before `done` and the turn was followed again. */
  cut: boolean;
  dones: number;
  mailAsked: boolean;
  mailOk: boolean;
}

export interface LoadOptions {
  turnsPerChat: number;
  thinkMs: [number, number];
  toolShare: number;
  mailShare: number;
  /** A turn with no `done` this long after it was sent is hung. */
  boundMs: number;
  /** The users `setActive` adds arrive spread evenly over this many ms (default 0: all at once). */
  arrivalMs?: number;
}

export interface Findings {
  /** Turns that got a `done` but are missing from their chat's history. */
  lost: string[];
  /** Turns whose model request lacked an earlier turn of the chat's history. */
  contextGaps: string[];
  chatsChecked: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class LoadUsers {
  readonly records: TurnRecord[] = [];
  readonly findings: Findings = { lost: [], contextGaps: [], chatsChecked: 0 };
  private stopped = false;
  private readonly workers: Promise<void>[] = [];

  constructor(
    private readonly rig: Rig,
    private readonly o: LoadOptions,
  ) {}

  get active(): number {
    return this.workers.length;
  }

  /** Start users until `n` run (never fewer than already run), spread over `arrivalMs`. */
  setActive(n: number): void {
    const from = this.workers.length;
    const to = Math.min(n, this.rig.users.length);
    while (this.workers.length < to) {
      const i = this.workers.length;
      const wait = ((i - from) * (this.o.arrivalMs ?? 0)) / Math.max(1, to - from);
      this.workers.push(
        sleep(wait)
          .then(() => (this.stopped ? undefined : this.user(i)))
          .catch((err) => void this.records.push(fault(`load${i}`, err))),
      );
    }
  }

  /** Stop: each user ends its current turn, checks and deletes its chat. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.workers);
  }

  private urls(i: number): string[] {
    const urls = this.rig.nodes.map((n) => n.url);
    return [...urls.slice(i % urls.length), ...urls.slice(0, i % urls.length)];
  }

  /** The client on the first node that answers (its own node first). */
  private async client(i: number, prefer?: Client): Promise<Client> {
    const { username, password } = this.rig.users[i];
    for (;;) {
      for (const url of this.urls(i)) {
        if (prefer?.base === url && (await alive(url))) return prefer;
        if (!(await alive(url))) continue;
        const c = new Client(url);
        const r = await c.login(username, password).catch(() => null);
        if (r?.status === 200) return c;
      }
      await sleep(300);
    }
  }

  private async user(i: number): Promise<void> {
    const name = this.rig.users[i].username;
    let c = await this.client(i);
    for (let chatNo = 0; !this.stopped; chatNo++) {
      const chat = `${name}-${chatNo}`;
      let sessionId: string | undefined;
      const mine: TurnRecord[] = [];
      for (let k = 1; k <= this.o.turnsPerChat && !this.stopped; k++) {
        const r = Math.random();
        const kind = r < this.o.mailShare ? '#mail' : r < this.o.mailShare + this.o.toolShare ? '#tool' : '';
        const out = await this.turn(
          i,
          () => c,
          (x) => (c = x),
          chat,
          k,
          kind,
          sessionId,
        );
        sessionId ??= out.sessionId;
        mine.push(out.rec);
        this.records.push(out.rec);
        await sleep(this.o.thinkMs[0] + Math.random() * (this.o.thinkMs[1] - this.o.thinkMs[0]));
      }
      if (sessionId) {
        c = await this.client(i, c);
        await this.check(c, chat, sessionId, mine);
        await c.request('DELETE', `/api/chat/sessions/${sessionId}`).catch(() => undefined);
      }
    }
    await this.sweep(await this.client(i, c));
  }

  private async turn(
    i: number,
    get: () => Client,
    set: (c: Client) => void,
    chat: string,
    k: number,
    kind: string,
    sessionId?: string,
  ) {
    const rec: TurnRecord = {
      user: this.rig.users[i].username,
      chat,
      k,
      start: nowMs(),
      outcome: 'refused',
      cut: false,
      dones: 0,
      mailAsked: kind === '#mail',
      mailOk: false,
    };
    const deadline = rec.start + this.o.boundMs;
    const body = {
      message: `[c=${chat} t=${k}] ${kind} please answer briefly`,
      ...(sessionId ? { session_id: sessionId } : {}),
    };
    const onEvent = (e: any) => {
      rec.firstMs ??= nowMs() - rec.start;
      if (e.type === 'tool_end' && e.tool === 'send_email' && e.ok === true) rec.mailOk = true;
      if (e.type === 'done') {
        rec.dones++;
        rec.outcome = 'done';
        rec.stopReason = e.stop_reason;
        rec.code = e.error?.code;
        rec.endMs = nowMs() - rec.start;
      }
    };
    let sid: string | undefined;
    let tid: string | null | undefined;
    try {
      const res = await get().request('POST', '/api/chat/messages', body, {});
      if (res.status !== 200) {
        rec.code = ((await res.json().catch(() => ({}))) as any)?.error?.code ?? `HTTP_${res.status}`;
        return { rec, sessionId: undefined };
      }
      sid = res.headers.get('x-chat-session-id') ?? undefined;
      tid = res.headers.get('x-chat-turn-id');
      await readNdjson(res, onEvent, deadline);
    } catch (err) {
      const refused = /ECONNREFUSED/.test(String((err as any)?.cause?.code ?? (err as any)?.cause?.message ?? ''));
      set(await this.client(i));
      if (refused) {
        rec.code = 'CONNECT';
        return { rec, sessionId: undefined };
      }
      // The connection broke after the prompt was sent, before the headers (the route sends them
      // with the first event): find the turn the way a reloaded page does, by the chat's history.
      rec.cut = true;
      ({ sid, tid } = await this.find(get(), chat, k, sessionId, deadline));
      if (!tid) {
        rec.code = 'RESET_BEFORE_START';
        return { rec, sessionId: sid };
      }
    }
    while (rec.dones === 0 && nowMs() < deadline && sid && tid) {
      rec.cut = true;
      const c = await this.client(i, get());
      set(c);
      const again = await c.request('GET', `/api/chat/sessions/${sid}/turns/${tid}/events?after=0`).catch(() => null);
      if (again?.status === 200) await readNdjson(again, onEvent, deadline);
      else await sleep(300);
    }
    if (rec.dones === 0) {
      rec.outcome = 'hung';
      rec.code = 'HUNG';
    }
    return { rec, sessionId: sid };
  }

  /** The session and turn of prompt `k` of `chat`, from the user's chats and their history (none when it never began). */
  private async find(
    c: Client,
    chat: string,
    k: number,
    sessionId: string | undefined,
    deadline: number,
  ): Promise<{ sid?: string; tid?: string }> {
    const tag = `[c=${chat} t=${k}]`;
    for (let n = 0; n < 10 && nowMs() < deadline; n++) {
      let sid = sessionId;
      if (!sid) {
        const list = await c.json('GET', `/api/chat/sessions?q=${encodeURIComponent(tag)}`).catch(() => null);
        sid = (list?.body?.sessions as { id: string }[] | undefined)?.[0]?.id;
      }
      if (sid) {
        const h = await c.json('GET', `/api/chat/sessions/${sid}/messages`).catch(() => null);
        const turn = (h?.body?.turns as { turn_id: string; prompt: string }[] | undefined)?.find((t) =>
          t.prompt.startsWith(tag),
        );
        if (turn) return { sid, tid: turn.turn_id };
        if (h?.status === 200) return { sid };
      } else if (n >= 2) return {};
      await sleep(500);
    }
    return { sid: sessionId };
  }

  /** Delete every chat the user still has (one a broken connection hid from it). */
  private async sweep(c: Client): Promise<void> {
    const list = await c.json('GET', '/api/chat/sessions').catch(() => null);
    for (const s of (list?.body?.sessions as { id: string }[] | undefined) ?? [])
      await c.request('DELETE', `/api/chat/sessions/${s.id}`).catch(() => undefined);
  }

  /** The chat's history holds every turn that got a done; each model request held the turns before it. */
  private async check(c: Client, chat: string, sessionId: string, mine: TurnRecord[]): Promise<void> {
    let h: { status: number; body: any } | null = null;
    for (let n = 0; n < 20 && h?.status !== 200; n++) {
      h = await c.json('GET', `/api/chat/sessions/${sessionId}/messages`).catch(() => null);
      if (h?.status !== 200) await sleep(500);
    }
    if (h?.status !== 200) {
      this.findings.lost.push(`${chat}: history unreadable (${h?.status})`);
      return;
    }
    this.findings.chatsChecked++;
    const stored = (h.body.turns as { prompt: string }[]).map((t) => Number(PROMPT_TAG.exec(t.prompt)?.[2] ?? NaN));
    for (const r of mine)
      if (r.outcome === 'done' && !stored.includes(r.k))
        this.findings.lost.push(`${chat} turn ${r.k} (${r.stopReason} ${r.code ?? ''})`);
    const seen = this.rig.seen.get(chat);
    stored.forEach((k, idx) => {
      const held = seen?.get(k);
      if (!held) return; // the model was never asked for it (the sandbox failed first)
      const missing = stored.slice(0, idx).filter((j) => !held.has(j));
      if (missing.length) this.findings.contextGaps.push(`${chat} turn ${k} lacked turns ${missing.join(',')}`);
    });
    this.rig.seen.delete(chat);
  }
}

async function alive(url: string): Promise<boolean> {
  return fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) }).then(
    (r) => r.ok,
    () => false,
  );
}

/** Read an NDJSON response until it ends, breaks or the deadline passes. */
async function readNdjson(res: Response, onEvent: (e: any) => void, deadline: number): Promise<void> {
  const reader = res.body!.getReader();
  const timer = setTimeout(() => void reader.cancel().catch(() => undefined), Math.max(0, deadline - nowMs()));
  try {
    for await (const e of ndjsonObjects(reader)) onEvent(e);
  } catch {
    // the connection broke (a node died): the caller follows the turn again
  } finally {
    clearTimeout(timer);
  }
}

function fault(user: string, err: unknown): TurnRecord {
  return {
    user,
    chat: '-',
    k: 0,
    start: nowMs(),
    outcome: 'refused',
    code: `CLIENT:${(err as Error).message.slice(0, 80)}`,
    cut: false,
    dones: 0,
    mailAsked: false,
    mailOk: false,
  };
}

/** Figures over the turns sent in [from, to). */
export function summarize(records: TurnRecord[], from = -Infinity, to = Infinity) {
  const rs = records.filter((r) => r.start >= from && r.start < to);
  const sorted = (xs: number[]) => xs.sort((a, b) => a - b);
  const pct = (xs: number[], p: number) =>
    xs.length ? xs[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)] : NaN;
  const firstOf = (keep: (r: TurnRecord) => boolean) =>
    sorted(rs.filter((r) => r.firstMs !== undefined && keep(r)).map((r) => r.firstMs!));
  const first = firstOf(() => true);
  const firstNew = firstOf((r) => r.k === 1);
  const firstLater = firstOf((r) => r.k > 1);
  const whole = sorted(rs.filter((r) => r.endMs !== undefined).map((r) => r.endMs!));
  const errors: Record<string, number> = {};
  for (const r of rs)
    if (r.code || r.outcome !== 'done' || r.stopReason !== 'end_turn')
      errors[r.code ?? r.stopReason ?? r.outcome] = (errors[r.code ?? r.stopReason ?? r.outcome] ?? 0) + 1;
  const span = Math.max(1, (Math.min(to, nowMs()) - Math.max(from, rs[0]?.start ?? 0)) / 1000);
  return {
    turns: rs.length,
    done: rs.filter((r) => r.outcome === 'done').length,
    hung: rs.filter((r) => r.outcome === 'hung').length,
    cut: rs.filter((r) => r.cut).length,
    turnsPerS: Math.round((rs.filter((r) => r.outcome === 'done').length / span) * 100) / 100,
    firstP50: Math.round(pct(first, 50)),
    firstP99: Math.round(pct(first, 99)),
    /** A chat's first turn (a sandbox claimed from the pool, or started) and its later turns (a live sandbox). */
    firstP99NewChat: Math.round(pct(firstNew, 99)),
    firstP99Later: Math.round(pct(firstLater, 99)),
    wholeP50: Math.round(pct(whole, 50)),
    wholeP99: Math.round(pct(whole, 99)),
    errors,
  };
}

/** Mail: sends the emulator received against the sends the turns reported. */
export function mailCounts(rig: Rig, records: TurnRecord[]) {
  const subjects = new Map<string, number>();
  for (const m of rig.google.mailbox) subjects.set(m.subject, (subjects.get(m.subject) ?? 0) + 1);
  const reported = new Set(records.filter((r) => r.mailOk).map((r) => `${r.chat}/${r.k}`));
  return {
    asked: records.filter((r) => r.mailAsked).length,
    reportedSent: reported.size,
    received: rig.google.mailbox.length,
    sentTwice: [...subjects].filter(([, n]) => n > 1).map(([s, n]) => `${s} ×${n}`),
    receivedNotReported: [...subjects.keys()].filter((s) => !reported.has(s)),
    /** Mail that went out while the model was later told the send failed: a model that sends again would mail twice. */
    sentButShownFailed: [...subjects.keys()]
      .filter((s) => !reported.has(s) && rig.mailResults.has(s) && !/"id"|sent/i.test(rig.mailResults.get(s)!))
      .map((s) => `${s}: "${rig.mailResults.get(s)!.slice(0, 120)}"`),
    reportedNotReceived: [...reported].filter((s) => !subjects.has(s)),
  };
}
