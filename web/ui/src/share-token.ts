// The token of the shared chat a page shows (#/share/<token>; chat-share.tsx provides it): charts
// and files of its turns are then fetched through the link (GET /api/share/<token>/…), never
// from the viewer's own workspace. Null on the chat page.
import { createContext } from 'preact';

export const ShareToken = createContext<string | null>(null);

/** Where a chart attachment is read: the chat's owner through the link, or the user's own. */
export function chartUrl(share: string | null, name: string): string {
  return share ? `/api/share/${encodeURIComponent(share)}/attachments/${name}` : `/api/chat/attachments/${name}`;
}

/** Where an uploaded file a message names is read (its bytes; add /preview for the table). */
export function sentFileBase(share: string | null): string {
  return share ? `/api/share/${encodeURIComponent(share)}/files` : '/api/chat/files';
}
