/**
 * Shapes the server and the browser bundle both name, defined once: the domain modules and the
 * web routes import them from here, and web/chat-api.ts / web/admin-api.ts re-export them to the
 * pages (web/ui/src). Each answer shape is a zod schema and a type of the same name (the route
 * definitions in web/routes/ name the schema; the pages import the type only, so no zod reaches
 * the page bundle). Request bodies are in core/api-requests.ts (zod schemas and their `z.infer` types).
 */

import { z } from 'zod';

/** The public view of a user: GET /api/auth/me, `user` of the login answer (domain/users.ts adds the timestamps). */
export const UserView = z.strictObject({
  id: z.number(),
  username: z.string(),
  email: z.string().nullable(),
  display_name: z.string().nullable(),
  is_superuser: z.boolean(),
  is_active: z.boolean(),
});
export type UserView = z.infer<typeof UserView>;

/** The model APIs a chat model can speak. */
export const ModelProvider = z.enum(['openai', 'anthropic', 'demo']);
export type ModelProvider = z.infer<typeof ModelProvider>;

/** A chat model as the admin API shows it: never the key, only whether there is one. */
export const ChatModelView = z.strictObject({
  id: z.string(),
  label: z.string(),
  provider: ModelProvider,
  model: z.string(),
  base_url: z.string().nullable(),
  has_key: z.boolean(),
  context_tokens: z.number(),
  /** It takes image input: a message's PNG and JPEG uploads go to it as image parts (docs/chat.md "Images"). */
  images: z.boolean(),
  enabled: z.boolean(),
  /** The server's default (id `default`, first written from AIRLOCK_MODEL_*): cannot be disabled or deleted. */
  default: z.boolean(),
  /** True while the entry follows AIRLOCK_MODEL_* (the default, until an admin changes it). */
  env_managed: z.boolean(),
  version: z.number(),
  created_at: z.string(),
  updated_at: z.string(),
  /** Price per million input / output tokens in `price_currency` (docs/usage.md); null: unpriced. */
  price_input_per_mtok: z.number().nullable(),
  price_output_per_mtok: z.number().nullable(),
  price_currency: z.string().nullable(),
});
export type ChatModelView = z.infer<typeof ChatModelView>;

/**
 * What the approval card shows of a held send's message, never stored and bounded
 * (domain/mail/preview.ts): the daemon's MailPreview and the API's ApprovalPreview add their
 * attachments to it.
 */
export const MailPreviewText = z.strictObject({
  from: z.array(z.string()),
  to: z.array(z.string()),
  cc: z.array(z.string()),
  bcc: z.array(z.string()),
  subject: z.string(),
  /** The plain-text part whole (or, when there is none, the visible text of the HTML part). */
  text: z.string(),
  /** Always false since the card shows a message whole or not at all (kept for older pages). */
  truncated: z.boolean(),
  text_from: z.enum(['plain', 'html', 'none']),
  /** The HTML part as sent (the page sanitises it and renders it in a sandboxed frame); null: none. */
  html: z.string().nullable(),
  /** The plain-text part and the visible text of the HTML part have different words (domain/mail/preview.ts partsDiffer). */
  parts_differ: z.boolean(),
});
export type MailPreviewText = z.infer<typeof MailPreviewText>;

/** A synced directory group (the team picker; domain/identity/orgs.ts lists them). */
export const ExternalGroup = z.strictObject({
  id: z.number(),
  connection_id: z.number(),
  email: z.string(),
  name: z.string(),
  description: z.string(),
  member_count: z.number(),
});
export type ExternalGroup = z.infer<typeof ExternalGroup>;

export const SyncJobStatus = z.enum(['pending', 'running', 'succeeded', 'failed']);
export type SyncJobStatus = z.infer<typeof SyncJobStatus>;
export const SyncJobTrigger = z.enum(['manual', 'scheduled']);
export type SyncJobTrigger = z.infer<typeof SyncJobTrigger>;

/**
 * A directory-sync job as people see it: the admin API's answer and `airlock sync-directory
 * --json` (domain/identity/job-view.ts). Its JSON columns are read; the run's owner fields stay inside.
 */
export const SyncJobView = z.strictObject({
  id: z.number(),
  connection_id: z.number(),
  status: SyncJobStatus,
  trigger: SyncJobTrigger,
  requested_by: z.number().nullable(),
  result: z.record(z.string(), z.unknown()).nullable(),
  error: z
    .looseObject({
      code: z.string().optional(),
      message: z.string().optional(),
      upstream_status: z.number().optional(),
      reason: z.string().optional(),
    })
    .nullable(),
  progress: z.record(z.string(), z.unknown()).nullable(),
  created_at: z.string(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
});
export type SyncJobView = z.infer<typeof SyncJobView>;
