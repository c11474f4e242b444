/**
 * The chat API's request and response shapes, shared by the server routes (web/chat-routes.ts)
 * and the chat page (web/ui/src/). Types only: the page's bundle imports nothing at run time from
 * here, so a changed response breaks the build (`tsc` of both sides), not the page.
 */
import type {
  ApprovalRequestEvent,
  ChatEvent,
  ConnectorApprovalRequestEvent,
  StopReason,
} from '../core/sandbox-protocol.js';
import type { ChatSessionEntry, StoredToolCall, StoredTurn, ToolCallStatus } from '../core/chat-history.js';
import type { ApprovalScope, ApprovalState } from '../core/approval-request.js';
import type { MailPreviewText } from '../core/api-types.js';
/** GET /api/connections: the OAuth connectors a user may connect (docs/connectors.md, "OAuth per user"). */
export type { ConnectorConnectionView } from '../core/connector-oauth.js';

export type {
  ApprovalRequestEvent,
  ConnectorApprovalRequestEvent,
  ApprovalScope,
  ApprovalState,
  ChatEvent,
  StopReason,
  StoredToolCall,
  StoredTurn,
  ToolCallStatus,
};
/** The request bodies: derived from the zod schemas the routes check them with. */
export type {
  ApprovalDecisionRequest,
  PinSessionRequest,
  RenameSessionRequest,
  SendMessageRequest,
  SwitchBranchRequest,
} from '../core/api-requests.js';

/** One entry of GET /api/chat/sessions. */
export interface ChatSessionSummary extends ChatSessionEntry {
  /** The model the chat runs with (its own while enabled, else the default's id). */
  model_id: string;
  /** The turn running now (from this server), if any: the page reattaches to it. */
  running_turn_id: string | null;
}

export interface ChatSessionList {
  sessions: ChatSessionSummary[];
}

export interface ChatSessionInfo {
  id: string;
  title: string;
  created_at: string;
  updated_at: string;
  /** The model the chat runs with (history and PATCH answers; the export leaves it out). */
  model_id?: string;
}

/** GET /api/chat/sessions/:id/messages: the branch shown, oldest turn first. */
export interface ChatHistory {
  session: ChatSessionInfo;
  turns: StoredTurn[];
  /** Tokens of the turns shown, summed (turns whose provider reported none count 0). */
  usage: { input_tokens: number; output_tokens: number };
}

/** The export of a chat (GET /api/chat/sessions/:id/export?format=json). */
export interface ChatExport {
  format: 'airlock-chat';
  version: 1;
  exported_at: string;
  session: ChatSessionInfo;
  /** The branch shown, as the page shows it. */
  turns: StoredTurn[];
  /** The same branch as the model sees it (provider-neutral items; docs/chat.md). */
  transcript: unknown[];
  /** Charts the turns refer to, from the user's workspace (PNG, base64). */
  attachments: { name: string; content_type: 'image/png'; bytes: number; data_base64: string }[];
}

/** POST /api/chat/sessions/:id/turns/:turnId/cancel answer. */
export interface CancelTurnResponse {
  turn_id: string;
  /** true: the turn was running and is being stopped; false: it had already ended. */
  cancelling: boolean;
}

/** A deny answers without `scope` (it belongs to an approval only). */
export type ApprovalDecisionResponse = { approval_id: string } & (
  { decision: 'approved'; scope: 'once' | 'recipient' } | { decision: 'denied' }
);

/**
 * GET /api/chat/sessions/:id/approvals/:approvalId/preview: a held send's message while it waits
 * (never stored). An attachment with `thumbnail` is served at …/attachments/:n.
 */
export interface ApprovalPreview extends MailPreviewText {
  attachments: { n: number; name: string; content_type: string; size: number; thumbnail: boolean }[];
}

/** GET /api/chat/model[?session_id=]: the model that answers (the chat's, else the default). */
export interface ChatModelInfo {
  id: string;
  label: string;
  provider: string;
  model: string;
  demo: boolean;
  context_tokens: number;
}

/** One model of the picker (GET /api/chat/models). */
export interface ChatModelOption {
  id: string;
  label: string;
  provider: 'openai' | 'anthropic' | 'demo';
  model: string;
  context_tokens: number;
  /** The server's default (a chat without a model of its own runs with it). */
  default: boolean;
}

/** GET /api/chat/models: the enabled models the user's agent policy allows, the default first. */
export interface ChatModelList {
  models: ChatModelOption[];
  default_id: string;
  /** The user's own default for new chats (Settings), when it is on offer to them; else null. */
  preferred_id: string | null;
}

/** The error body every route answers with on failure. */
export interface ApiErrorBody {
  error: { code: string; message: string };
}

/** A file the user uploaded into the workspace (web/upload-routes.ts). */
export interface UploadedFile {
  name: string;
  kind: 'csv' | 'xlsx' | 'png' | 'jpeg' | 'pdf' | 'docx' | 'pptx' | 'txt' | 'md' | 'json';
  bytes: number;
  uploaded_at: string;
}

/**
 * What a chat shows of a file: a table's first rows (CSV, XLSX), the start of a text (a JSON or
 * TXT file run_python kept), or nothing more for a picture.
 */
export interface FilePreview {
  name: string;
  kind: UploadedFile['kind'];
  table?: { rows: string[][]; truncated: boolean; notes: string[]; sheet: string; sheets?: string[] };
  text?: { text: string; truncated: boolean };
}

/** POST /api/chat/sessions/:id/files (201). */
export interface UploadAnswer {
  file: UploadedFile;
  preview: FilePreview;
}
