/**
 * Shapes the server and the browser bundle both name, defined once: the domain modules and the
 * web routes import them from here, and web/chat-api.ts / web/admin-api.ts re-export them to the
 * pages (web/ui/src). Types only, importing nothing (no node types: the page bundle's `tsc` reads
 * this file). Request bodies are in core/api-requests.ts (zod schemas and their `z.infer` types).
 */

/** The public view of a user: GET /api/auth/me, `user` of the login answer (domain/users.ts adds the timestamps). */
export interface UserView {
  id: number;
  username: string;
  email: string | null;
  display_name: string | null;
  is_superuser: boolean;
  is_active: boolean;
}

/** The model APIs a chat model can speak. */
export type ModelProvider = 'openai' | 'anthropic' | 'demo';

/** A chat model as the admin API shows it: never the key, only whether there is one. */
export interface ChatModelView {
  id: string;
  label: string;
  provider: ModelProvider;
  model: string;
  base_url: string | null;
  has_key: boolean;
  context_tokens: number;
  /** It takes image input: a message's PNG and JPEG uploads go to it as image parts (docs/chat.md "Images"). */
  images: boolean;
  enabled: boolean;
  /** The server's default (id `default`, first written from AIRLOCK_MODEL_*): cannot be disabled or deleted. */
  default: boolean;
  /** True while the entry follows AIRLOCK_MODEL_* (the default, until an admin changes it). */
  env_managed: boolean;
  version: number;
  created_at: string;
  updated_at: string;
  /** Price per million input / output tokens in `price_currency` (docs/usage.md); null: unpriced. */
  price_input_per_mtok: number | null;
  price_output_per_mtok: number | null;
  price_currency: string | null;
}

/**
 * What the approval card shows of a held send's message, never stored and bounded
 * (domain/mail/preview.ts): the daemon's MailPreview and the API's ApprovalPreview add their
 * attachments to it.
 */
export interface MailPreviewText {
  from: string[];
  to: string[];
  cc: string[];
  bcc: string[];
  subject: string;
  /** The plain-text part whole (or, when there is none, the visible text of the HTML part). */
  text: string;
  /** Always false since the card shows a message whole or not at all (kept for older pages). */
  truncated: boolean;
  text_from: 'plain' | 'html' | 'none';
  /** The HTML part as sent (the page sanitises it and renders it in a sandboxed frame); null: none. */
  html: string | null;
  /** The plain-text part and the visible text of the HTML part have different words (domain/mail/preview.ts partsDiffer). */
  parts_differ: boolean;
}

/** A synced directory group (the team picker; domain/identity/orgs.ts lists them). */
export interface ExternalGroup {
  id: number;
  connection_id: number;
  email: string;
  name: string;
  description: string;
  member_count: number;
}

export type SyncJobStatus = 'pending' | 'running' | 'succeeded' | 'failed';
export type SyncJobTrigger = 'manual' | 'scheduled';

/**
 * A directory-sync job as people see it: the admin API's answer and `airlock sync-directory
 * --json` (domain/identity/job-view.ts). Its JSON columns are read; the run's owner fields stay inside.
 */
export interface SyncJobView {
  id: number;
  connection_id: number;
  status: SyncJobStatus;
  trigger: SyncJobTrigger;
  requested_by: number | null;
  result: Record<string, unknown> | null;
  error:
    ({ code?: string; message?: string; upstream_status?: number; reason?: string } & Record<string, unknown>) | null;
  progress: Record<string, unknown> | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}
