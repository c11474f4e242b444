/**
 * The chat API's request and response shapes, shared by the server routes (web/chat-routes.ts)
 * and the chat page (web/ui/src/). Each answer is a zod schema with a type of the same name: the
 * route definitions (web/routes/) name the schema, the routes build their answers as the type,
 * and the page imports the types only (`import type`), nothing at run time.
 */
import { z } from 'zod';
import type {
  ApprovalRequestEvent,
  ChatEvent,
  ConnectorApprovalRequestEvent,
  StopReason,
} from '../core/sandbox-protocol.js';
import { ChatSessionEntry, StoredTurn, TokenUsage } from '../core/chat-history.js';
import type { StoredToolCall, ToolCallStatus } from '../core/chat-history.js';
import type { ApprovalScope, ApprovalState } from '../core/approval-request.js';
import { MailPreviewText, ModelProvider } from '../core/api-types.js';
/** GET /api/connections: the OAuth connectors a user may connect (docs/connectors.md, "OAuth per user"). */
export { ConnectorConnectionView } from '../core/connector-oauth.js';

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
export const ChatSessionSummary = ChatSessionEntry.extend({
  /** The model the chat runs with (its own while enabled, else the default's id). */
  model_id: z.string(),
  /** The turn running now (from this server), if any: the page reattaches to it. */
  running_turn_id: z.string().nullable(),
});
export type ChatSessionSummary = z.infer<typeof ChatSessionSummary>;

export const ChatSessionList = z.strictObject({ sessions: z.array(ChatSessionSummary) });
export type ChatSessionList = z.infer<typeof ChatSessionList>;

export const ChatSessionInfo = z.strictObject({
  id: z.string(),
  title: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
  /** The model the chat runs with (history and PATCH answers; the export leaves it out). */
  model_id: z.string().optional(),
});
export type ChatSessionInfo = z.infer<typeof ChatSessionInfo>;

/** GET /api/chat/sessions/:id/messages: the branch shown, oldest turn first. */
export const ChatHistory = z.strictObject({
  session: ChatSessionInfo,
  turns: z.array(StoredTurn),
  /** Tokens of the turns shown, summed (turns whose provider reported none count 0). */
  usage: TokenUsage,
});
export type ChatHistory = z.infer<typeof ChatHistory>;

/** The export of a chat (GET /api/chat/sessions/:id/export?format=json). */
export const ChatExport = z.strictObject({
  format: z.literal('airlock-chat'),
  version: z.literal(1),
  exported_at: z.string(),
  session: ChatSessionInfo,
  /** The branch shown, as the page shows it. */
  turns: z.array(StoredTurn),
  /** The same branch as the model sees it (provider-neutral items; docs/chat.md). */
  transcript: z.array(z.unknown()),
  /** Charts the turns refer to, from the user's workspace (PNG, base64). */
  attachments: z.array(
    z.strictObject({
      name: z.string(),
      content_type: z.literal('image/png'),
      bytes: z.number(),
      data_base64: z.string(),
    }),
  ),
});
export type ChatExport = z.infer<typeof ChatExport>;

/** POST /api/chat/sessions/:id/turns/:turnId/cancel answer. */
export const CancelTurnResponse = z.strictObject({
  turn_id: z.string(),
  /** true: the turn was running and is being stopped; false: it had already ended. */
  cancelling: z.boolean(),
});
export type CancelTurnResponse = z.infer<typeof CancelTurnResponse>;

/** A deny answers without `scope` (it belongs to an approval only). */
export const ApprovalDecisionResponse = z.union([
  z.strictObject({ approval_id: z.string(), decision: z.literal('approved'), scope: z.enum(['once', 'recipient']) }),
  z.strictObject({ approval_id: z.string(), decision: z.literal('denied') }),
]);
export type ApprovalDecisionResponse = z.infer<typeof ApprovalDecisionResponse>;

/**
 * GET /api/chat/sessions/:id/approvals/:approvalId/preview: a held send's message while it waits
 * (never stored). An attachment with `thumbnail` is served at …/attachments/:n.
 */
export const ApprovalPreview = MailPreviewText.extend({
  attachments: z.array(
    z.strictObject({
      n: z.number(),
      name: z.string(),
      content_type: z.string(),
      size: z.number(),
      thumbnail: z.boolean(),
    }),
  ),
});
export type ApprovalPreview = z.infer<typeof ApprovalPreview>;

/** GET /api/chat/model[?session_id=]: the model that answers (the chat's, else the default). */
export const ChatModelInfo = z.strictObject({
  id: z.string(),
  label: z.string(),
  provider: ModelProvider,
  model: z.string(),
  demo: z.boolean(),
  context_tokens: z.number(),
});
export type ChatModelInfo = z.infer<typeof ChatModelInfo>;

/** One model of the picker (GET /api/chat/models). */
export const ChatModelOption = z.strictObject({
  id: z.string(),
  label: z.string(),
  provider: ModelProvider,
  model: z.string(),
  context_tokens: z.number(),
  /** The server's default (a chat without a model of its own runs with it). */
  default: z.boolean(),
});
export type ChatModelOption = z.infer<typeof ChatModelOption>;

/** GET /api/chat/models: the enabled models the user's agent policy allows, the default first. */
export const ChatModelList = z.strictObject({
  models: z.array(ChatModelOption),
  default_id: z.string(),
  /** The user's own default for new chats (Settings), when it is on offer to them; else null. */
  preferred_id: z.string().nullable(),
});
export type ChatModelList = z.infer<typeof ChatModelList>;

/** The error body every route answers with on failure. */
export interface ApiErrorBody {
  error: { code: string; message: string };
}

export const UploadKind = z.enum(['csv', 'xlsx', 'png', 'jpeg', 'pdf', 'docx', 'pptx', 'txt', 'md', 'json']);

/** A file the user uploaded into the workspace (web/upload-routes.ts). */
export const UploadedFile = z.strictObject({
  name: z.string(),
  kind: UploadKind,
  bytes: z.number(),
  uploaded_at: z.string(),
});
export type UploadedFile = z.infer<typeof UploadedFile>;

/**
 * What a chat shows of a file: a table's first rows (CSV, XLSX), the start of a text (a JSON or
 * TXT file run_python kept), or nothing more for a picture.
 */
export const FilePreview = z.strictObject({
  name: z.string(),
  kind: UploadKind,
  table: z
    .strictObject({
      rows: z.array(z.array(z.string())),
      truncated: z.boolean(),
      notes: z.array(z.string()),
      sheet: z.string(),
      sheets: z.array(z.string()).optional(),
    })
    .optional(),
  text: z.strictObject({ text: z.string(), truncated: z.boolean() }).optional(),
});
export type FilePreview = z.infer<typeof FilePreview>;

/** POST /api/chat/sessions/:id/files (201). */
export const UploadAnswer = z.strictObject({ file: UploadedFile, preview: FilePreview });
export type UploadAnswer = z.infer<typeof UploadAnswer>;

/** GET /api/chat/sessions/:id/files and GET /api/chat/files: the user's uploads. */
export const UploadList = z.strictObject({ files: z.array(UploadedFile) });
export type UploadList = z.infer<typeof UploadList>;
