// A new chat's title, made when its first turn ends (docs/chat.md "Chat titles"): the page asks
// the list again every second until the title is no longer the provisional one, for at most as
// long as the server waits for the model (plus a little).
import type { ChatSessionList, ChatSessionSummary } from '../../chat-api.js';
import { api } from './api.js';

const TRIES = 10;
const EVERY_MS = 1000;

/** The chat's entry once its title is made (undefined: gone, or still provisional after the wait). */
export async function waitForTitle(sessionId: string): Promise<ChatSessionSummary | undefined> {
  for (let i = 0; i < TRIES; i++) {
    const r = await api<ChatSessionList>('GET', '/api/chat/sessions').catch(() => undefined);
    const s = r?.sessions.find((x) => x.id === sessionId);
    if (r && !s) return undefined;
    if (s && s.title_source !== 'message') return s;
    await new Promise((resolve) => setTimeout(resolve, EVERY_MS));
  }
  return undefined;
}
