/** The chat: sessions, turns and their events, files, approvals, sharing. One definition per route: docs/architecture.md, "Routes defined once". */
import {
  ApprovalDecisionSchema,
  PinSessionSchema,
  RenameSessionSchema,
  SendMessageSchema,
  SwitchBranchSchema,
} from '../../core/api-requests.js';
import { FeedbackSchema } from '../feedback-routes.js';
import { area, type RouteDef } from './define.js';

export const CHAT_ROUTES: readonly RouteDef[] = [
  ...area('chat', [
    {
      method: 'post',
      path: '/api/chat/messages',
      who: 'user',
      summary: 'Send a prompt; answer an NDJSON event stream ending in one done',
      body: SendMessageSchema,
    },
    {
      method: 'get',
      path: '/api/chat/model',
      who: 'user',
      summary:
        "The model that answers (?session_id=: that chat's, else the default): {id, label, provider, model, demo, context_tokens}",
    },
    {
      method: 'get',
      path: '/api/chat/models',
      who: 'user',
      summary: "The models on offer that the user's agent policy allows (the picker), the default first",
    },
    { method: 'get', path: '/api/chat/sessions', who: 'user', summary: 'Own chat sessions' },
    {
      method: 'get',
      path: '/api/chat/sessions/{id}/messages',
      who: 'user',
      summary: "The branch shown of an own chat session, with each turn's siblings and usage",
    },
    {
      method: 'put',
      path: '/api/chat/sessions/{id}/pin',
      who: 'user',
      summary: 'Pin an own chat to the top of the list, or unpin it ({pinned}) → 204',
      body: PinSessionSchema,
    },
    {
      method: 'post',
      path: '/api/chat/sessions/{id}/branch',
      who: 'user',
      summary: 'Show the branch through a turn (an edit or regenerate sibling) → the branch shown',
      body: SwitchBranchSchema,
    },
    {
      method: 'get',
      path: '/api/chat/sessions/{id}/export',
      who: 'user',
      summary: 'Export the branch shown: ?format=markdown (a file) or json (turns, transcript, charts)',
    },
    {
      method: 'patch',
      path: '/api/chat/sessions/{id}',
      who: 'user',
      summary: 'Rename an own chat session and/or switch its model ({title?, model_id?})',
      body: RenameSessionSchema,
    },
    {
      method: 'delete',
      path: '/api/chat/sessions/{id}',
      who: 'user',
      summary: 'Delete an own chat session (stops its turn, ends its sandbox)',
    },
    {
      method: 'get',
      path: '/api/chat/sessions/{id}/share',
      who: 'user',
      summary: 'Whether an own chat has a live read-only link → {shared, created_at}',
    },
    {
      method: 'post',
      path: '/api/chat/sessions/{id}/share',
      who: 'user',
      summary:
        'Make a read-only link to an own chat (revokes the old one) → 201 {shared, created_at, token, url}; the token is shown once',
    },
    {
      method: 'delete',
      path: '/api/chat/sessions/{id}/share',
      who: 'user',
      summary: "Revoke an own chat's link → 204",
    },
    {
      method: 'get',
      path: '/api/share/{token}',
      who: 'user',
      summary: 'A shared chat, read-only (same organisation as its owner; else 404 ERR_SHARE_NOT_FOUND)',
    },
    {
      method: 'get',
      path: '/api/share/{token}/attachments/{name}',
      who: 'user',
      summary: "A chart or a kept run_python file the shared turns name, from the owner's workspace",
    },
    {
      method: 'get',
      path: '/api/share/{token}/attachments/{name}/preview',
      who: 'user',
      summary: 'The preview of a kept run_python file the shared turns name (CSV/XLSX rows, JSON/TXT text)',
    },
    {
      method: 'get',
      path: '/api/share/{token}/files/{name}',
      who: 'user',
      summary: 'A file a shared prompt names (images inline, tables as a download)',
    },
    {
      method: 'get',
      path: '/api/share/{token}/files/{name}/preview',
      who: 'user',
      summary: 'The first rows of a table a shared prompt names',
    },
    {
      method: 'get',
      path: '/api/chat/sessions/{id}/feedback',
      who: 'user',
      summary: "The caller's feedback on the turns of an own chat → {feedback: [{turn_id, rating, note, updated_at}]}",
    },
    {
      method: 'put',
      path: '/api/chat/sessions/{id}/turns/{turnId}/feedback',
      who: 'user',
      summary:
        'Rate a finished answer {rating: up|down, note? (≤ 2,000 characters)} → the feedback; 409 ERR_FEEDBACK_TURN_RUNNING',
      body: FeedbackSchema,
    },
    {
      method: 'delete',
      path: '/api/chat/sessions/{id}/turns/{turnId}/feedback',
      who: 'user',
      summary: "Take back the caller's feedback on a turn → 204",
    },
    {
      method: 'get',
      path: '/api/chat/sessions/{id}/turns/{turnId}/events',
      who: 'user',
      summary: 'Replay and follow a turn as NDJSON from the event after ?after=SEQ',
    },
    {
      method: 'post',
      path: '/api/chat/sessions/{id}/turns/{turnId}/cancel',
      who: 'user',
      summary: 'Stop a running turn',
    },
    {
      method: 'post',
      path: '/api/chat/sessions/{id}/approvals/{approvalId}',
      who: 'user',
      summary: 'Approve or deny a mail send held at the proxy ({decision, scope?})',
      body: ApprovalDecisionSchema,
    },
    {
      method: 'get',
      path: '/api/chat/sessions/{id}/approvals/{approvalId}/preview',
      who: 'user',
      summary:
        'The message of a send held for approval while it waits: from, to, cc, bcc, subject, body text, attachments (410 once decided)',
    },
    {
      method: 'get',
      path: '/api/chat/sessions/{id}/approvals/{approvalId}/attachments/{n}',
      who: 'user',
      summary: 'An image attachment of a send held for approval, for its thumbnail (410 once decided)',
    },
    {
      method: 'get',
      path: '/api/chat/attachments/{name}',
      who: 'user',
      summary: 'A chart (<uuid>.png) or a file run_python kept from out/ (<uuid>.<ext>), from the own workspace',
    },
    {
      method: 'get',
      path: '/api/chat/attachments/{name}/preview',
      who: 'user',
      summary: 'The preview of a kept file that is not an image: CSV/XLSX first rows, JSON/TXT start',
    },
    {
      method: 'post',
      path: '/api/chat/sessions/{id}/files',
      who: 'user',
      summary: 'Upload a CSV, XLSX, PNG or JPEG into the workspace (raw body, X-File-Name; 201 {file, preview})',
    },
    {
      method: 'get',
      path: '/api/chat/sessions/{id}/files',
      who: 'user',
      summary: "The user's uploaded files ({files})",
    },
    {
      method: 'get',
      path: '/api/chat/sessions/{id}/files/{name}/preview',
      who: 'user',
      summary: "An uploaded file's preview: the first rows of a table (?sheet=)",
    },
    {
      method: 'get',
      path: '/api/chat/sessions/{id}/files/{name}',
      who: 'user',
      summary: "An uploaded file's bytes (images inline, tables as a download)",
    },
    {
      method: 'post',
      path: '/api/chat/files',
      who: 'user',
      summary: 'Upload a file before a chat exists (as POST /api/chat/sessions/{id}/files)',
    },
    {
      method: 'get',
      path: '/api/chat/files',
      who: 'user',
      summary: "The user's uploaded files (as GET /api/chat/sessions/{id}/files)",
    },
    {
      method: 'get',
      path: '/api/chat/files/{name}/preview',
      who: 'user',
      summary: "An uploaded file's preview (?sheet=)",
    },
    { method: 'get', path: '/api/chat/files/{name}', who: 'user', summary: "An uploaded file's bytes" },
  ]),
];
