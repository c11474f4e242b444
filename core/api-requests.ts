/**
 * The request bodies of the chat and sign-in APIs as zod schemas, and their types derived from
 * them (`z.infer`), so the route that checks a body and the page that sends it share one
 * definition (docs/architecture.md#validation). Imports nothing but zod and has no node
 * imports: the browser bundle (web/ui/src) takes its types from here through web/chat-api.ts
 * and web/admin-api.ts (type-only, so no zod in the bundle); domain and web routes import the
 * schemas and limits.
 */
import { z } from 'zod';

/** What a model id in a request may look like (the admin API's ids). */
export const MODEL_ID_PATTERN = '^[a-z0-9][a-z0-9-]{0,31}$';
/** Longest chat title (longer ones are cut when a title is set). */
export const MAX_TITLE_CHARS = 120;

const ID = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9-]+$/, 'letters, digits and - only');
const MODEL_ID = z
  .string()
  .regex(
    new RegExp(MODEL_ID_PATTERN),
    'must be 1–32 lower-case letters, digits or dashes, starting with a letter or digit',
  );

/** POST /api/chat/messages body. */
export const SendMessageSchema = z.strictObject({
  message: z.string().min(1).max(32000),
  session_id: ID.optional(),
  /**
   * Regenerate or edit: a turn of the branch shown. The new turn becomes its sibling (the same
   * parent), the old one stays on its own branch, and the branch shown is the new one.
   */
  replaces_turn_id: ID.optional(),
  /** The chat's model (an id of GET /api/chat/models): for a new chat, or a switch before this turn. */
  model_id: MODEL_ID.optional(),
});
export type SendMessageRequest = z.infer<typeof SendMessageSchema>;

/** PUT /api/chat/sessions/:id/pin body (answers 204). */
export const PinSessionSchema = z.strictObject({ pinned: z.boolean() });
export type PinSessionRequest = z.infer<typeof PinSessionSchema>;

/** POST /api/chat/sessions/:id/branch body: show the branch through this turn (one of a turn's siblings). */
export const SwitchBranchSchema = z.strictObject({ turn_id: ID });
export type SwitchBranchRequest = z.infer<typeof SwitchBranchSchema>;

/** PATCH /api/chat/sessions/:id body: a new title, another model (refused while a turn runs), or both. */
export const RenameSessionSchema = z
  .strictObject({
    title: z.string().min(1).max(MAX_TITLE_CHARS).regex(/\S/, 'must not be only spaces').optional(),
    model_id: MODEL_ID.optional(),
  })
  .refine((v) => Object.keys(v).length > 0, { message: 'Nothing to change: send at least one field.' });
export type RenameSessionRequest = z.infer<typeof RenameSessionSchema>;

/** POST /api/chat/sessions/:id/approvals/:approvalId body: the user's answer to an approval_request. */
export const ApprovalDecisionSchema = z.strictObject({
  decision: z.enum(['approve', 'deny']),
  /** `recipient`: also later sends to the same recipients in this session (default `once`). */
  scope: z.enum(['once', 'recipient']).optional(),
});
export type ApprovalDecisionRequest = z.infer<typeof ApprovalDecisionSchema>;

/** POST /api/auth/login body. */
export const LoginSchema = z.strictObject({
  username: z.string().min(1).max(150),
  password: z.string().min(1).max(1024),
  next: z.string().min(1).max(2048).optional(),
});
export type LoginRequest = z.infer<typeof LoginSchema>;

/** POST /api/account/connect body. */
export const ConnectAccountSchema = z.strictObject({ return_to: z.string().max(512).optional() });
export type ConnectAccountRequest = z.infer<typeof ConnectAccountSchema>;

const url = z
  .string()
  .max(2000)
  .refine((u) => {
    try {
      const p = new URL(u);
      return (p.protocol === 'https:' || p.protocol === 'http:') && !p.username && !p.password && !p.hash;
    } catch {
      return false;
    }
  }, 'must be an http(s) URL without credentials or fragment (e.g. https://api.openai.com/v1)');

const CHAT_MODEL_FIELDS = {
  label: z.string().trim().min(1).max(80),
  provider: z.enum(['openai', 'anthropic', 'demo']),
  model: z
    .string()
    .regex(
      /^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}$/,
      'must be a model name such as gpt-4o or claude-sonnet-4 (letters, digits, . _ : / @ + -)',
    ),
  base_url: url.nullable(),
  // Printable, no spaces: a key with a line break could start a header of its own.
  api_key: z
    .string()
    .min(1)
    .max(4096)
    .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
    .nullable(),
  context_tokens: z.number().int().min(1000).max(10_000_000),
  images: z.boolean(),
  enabled: z.boolean(),
  // The price per million tokens (docs/usage.md "Cost"); null: unpriced (its usage costs 0).
  price_input_per_mtok: z.number().min(0).max(1_000_000).nullable(),
  price_output_per_mtok: z.number().min(0).max(1_000_000).nullable(),
  price_currency: z
    .string()
    .regex(/^[A-Z]{3}$/, 'must be a three-letter ISO 4217 code such as USD or EUR')
    .nullable(),
};
/** POST /api/admin/chat-models body (`api_key` absent: no key). */
export const ChatModelCreateSchema = z
  .object({
    id: z
      .string()
      .regex(
        new RegExp(MODEL_ID_PATTERN),
        'must be 1–32 lower-case letters, digits or dashes, starting with a letter or digit',
      ),
    ...CHAT_MODEL_FIELDS,
  })
  .partial({
    base_url: true,
    api_key: true,
    images: true,
    enabled: true,
    price_input_per_mtok: true,
    price_output_per_mtok: true,
    price_currency: true,
  })
  .strict();
/** PATCH /api/admin/chat-models/:id body: any field but the id; `api_key` absent keeps the key, null removes it. */
export const ChatModelChangeSchema = z.object(CHAT_MODEL_FIELDS).partial().strict();
export type ChatModelInput = z.infer<typeof ChatModelCreateSchema>;
export type ChatModelChange = z.infer<typeof ChatModelChangeSchema>;
