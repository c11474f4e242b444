/**
 * Chat titles made from the first exchange (docs/chat.md "Chat titles"). A new chat is titled with
 * its first message (cleaned, cut at a word boundary: `fallbackTitle`); when its first turn ends,
 * the chat's own model is asked once for a short title (the host calls the provider directly with
 * the model entry's key, as the egress gateway would: the key never reaches a sandbox). The
 * fallback stays when the model is the offline demo one, fails, answers nothing usable or takes
 * longer than TITLE_TIMEOUT_MS. A title the user renamed is never overwritten (the write is
 * conditional on `title_source = 'message'`, so a rename during the call wins).
 */
import type { Config, Encryptor, Logger } from '../../core/index.js';
import type { Sql } from '../db/index.js';
import { sessionModel, type ResolvedModel } from './models.js';

/** How long the title call may take before the fallback stays. */
export const TITLE_TIMEOUT_MS = 8000;
/** Longest title made here (the first message's or the model's). */
export const AUTO_TITLE_CHARS = 60;
/** How much of the exchange the model sees. */
const EXCERPT_CHARS = 2000;
/** Sent with the title request: the provider ignores it; a scripted test server answers it apart from its script. */
export const TITLE_PURPOSE_HEADER = 'x-airlock-purpose';

const INSTRUCTION =
  'Write a short title (at most 6 words) for the conversation below, in the language of the user. Answer with the title only: no quotes, no full stop, no prefix.';

/** The "Attached: uploads/a.csv, …" line the chat page adds under a message (web/ui/src/chat-files.tsx). */
const ATTACHED_LINE = /(?:^|\n\n)Attached: ((?:uploads\/[A-Za-z0-9._-]+(?:, )?)+)$/;

/**
 * The user's own words of a message: without the page's "Attached:" line, which is a marker for
 * the agent, not something the user wrote. A message of files only is named by its files.
 */
export function userWords(message: string): string {
  const m = ATTACHED_LINE.exec(message);
  if (!m) return message;
  const words = message.slice(0, m.index).trim();
  return words || m[1]!.replace(/uploads\//g, '');
}

/** A message as a title: the user's words (userWords), markdown markers and spaces folded, cut at a word boundary (… when cut). */
export function fallbackTitle(message: string, max = AUTO_TITLE_CHARS): string {
  const text = userWords(message)
    .replace(/```[\s\S]*?(```|$)/g, ' ')
    .replace(/^[\s#>*\-+]+/gm, '')
    .replace(/\*\*|__|`+/g, '')
    .replace(/\s+/g, ' ')
    .trim();
  if (text.length <= max) return text || 'New chat';
  const cut = text.slice(0, max - 1);
  const space = cut.lastIndexOf(' ');
  return `${(space >= max / 2 ? cut.slice(0, space) : cut).replace(/[\s,;:.-]+$/, '')}…`;
}

/** The model's answer as a title: one line, no quotes or "Title:", at most AUTO_TITLE_CHARS; undefined if nothing is left. */
export function cleanModelTitle(raw: string): string | undefined {
  const line = raw
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l.length > 0);
  if (!line) return undefined;
  const t = line
    .replace(/^(title|titel|titre)\s*:\s*/i, '')
    .replace(/^["'“”‘’«»*#\s]+|["'“”‘’«»*\s.]+$/g, '')
    .replace(/\s+/g, ' ')
    .trim();
  return t ? fallbackTitle(t) : undefined;
}

/** Ask the model for a title; throws on any failure (the caller keeps the fallback). */
export async function askModelForTitle(
  m: ResolvedModel,
  prompt: string,
  answer: string,
  signal: AbortSignal,
): Promise<string | undefined> {
  const exchange = `User: ${prompt.slice(0, EXCERPT_CHARS)}\n\nAssistant: ${answer.slice(0, EXCERPT_CHARS)}`;
  const headers: Record<string, string> = { 'content-type': 'application/json', [TITLE_PURPOSE_HEADER]: 'chat-title' };
  let url: string;
  let body: unknown;
  if (m.provider === 'anthropic') {
    url = `${(m.baseUrl ?? 'https://api.anthropic.com').replace(/\/+$/, '')}/v1/messages`;
    headers['anthropic-version'] = '2023-06-01';
    if (m.apiKey) headers['x-api-key'] = m.apiKey;
    body = { model: m.model, max_tokens: 30, system: INSTRUCTION, messages: [{ role: 'user', content: exchange }] };
  } else {
    url = `${(m.baseUrl ?? 'https://api.openai.com/v1').replace(/\/+$/, '')}/chat/completions`;
    if (m.apiKey) headers.authorization = `Bearer ${m.apiKey}`;
    body = {
      model: m.model,
      max_tokens: 30,
      stream: false,
      messages: [
        { role: 'system', content: INSTRUCTION },
        { role: 'user', content: exchange },
      ],
    };
  }
  const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body), signal, redirect: 'error' });
  if (!res.ok) throw new Error(`the model answered HTTP ${res.status}`);
  const json = (await res.json()) as {
    content?: { type?: string; text?: string }[];
    choices?: { message?: { content?: string | null } }[];
  };
  const text =
    m.provider === 'anthropic'
      ? (json.content ?? [])
          .filter((c) => c.type === 'text')
          .map((c) => c.text ?? '')
          .join('')
      : (json.choices?.[0]?.message?.content ?? '');
  return cleanModelTitle(text);
}

export interface TitleDeps {
  db: Sql;
  encryptor: Encryptor;
  model: Readonly<Config['model']>;
  log: Logger;
  timeoutMs?: number;
}

/**
 * After a turn ends: when the chat still has its provisional title, give it one made from the
 * exchange (the model's, else the fallback). Never throws (a failure is logged and the title
 * stays); resolves with the title written, or undefined when none was.
 */
export async function titleAfterTurn(
  d: TitleDeps,
  sessionId: string,
  prompt: string,
  answer: string,
): Promise<string | undefined> {
  try {
    const s = await d.db
      .selectFrom('chat_sessions')
      .select('title_source')
      .where('id', '=', sessionId)
      .executeTakeFirst();
    if (!s || s.title_source !== 'message') return undefined;
    const m = await sessionModel(d.db, d.encryptor, d.model, sessionId);
    let title: string | undefined;
    if (m.provider !== 'demo') {
      try {
        title = await askModelForTitle(m, prompt, answer, AbortSignal.timeout(d.timeoutMs ?? TITLE_TIMEOUT_MS));
      } catch (err) {
        d.log.info(
          { sessionId, reason: err instanceof Error ? err.name : 'error' },
          'chat title: the model gave none; the first message stays',
        );
      }
    }
    const source = title ? 'model' : 'fallback';
    title ??= fallbackTitle(prompt);
    const r = await d.db
      .updateTable('chat_sessions')
      .set({ title, title_source: source })
      .where('id', '=', sessionId)
      .where('title_source', '=', 'message')
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0 ? title : undefined;
  } catch (err) {
    d.log.warn({ sessionId, err }, 'chat title: could not be written');
    return undefined;
  }
}
