/**
 * The response (and request) shapes of the sign-in and admin APIs, shared by the server routes
 * (web/auth-routes.ts, web/admin-*-routes.ts, web/identity/, web/data-access/) and the admin pages
 * (web/ui/src/). Each answer is a zod schema with a type of the same name: the route definitions
 * (web/routes/) name the schema, the routes build their answers as the type, and the pages import
 * the types only (`import type`), so the page bundle takes nothing from here at run time. The
 * shapes domain/ names too are defined once in core/api-types*.ts.
 */

import { z } from 'zod';
import { ChatModelView, ExternalGroup, SyncJobView, UserView } from '../core/api-types.js';
import { ConnectorView } from '../core/connectors.js';
import { BudgetView, EffectiveAgentPolicyView, MailPolicy, UsageRowView } from '../core/api-types-admin.js';

export { ChatModelView, ExternalGroup, SyncJobView };
export type { ModelProvider, SyncJobStatus, SyncJobTrigger } from '../core/api-types.js';
export { MailPolicy, EffectiveAgentPolicyView };

// ------------------------------------------------------------------ errors

/** One problem of a request body: a dotted field path and a reason written for people. */
export interface ApiProblem {
  field: string;
  message: string;
}

/** The error object every route answers with (inside `{ error }`); details vary by code. */
export interface ApiErrorDetail {
  code: string;
  message: string;
  /** The first bad field (validation errors). */
  field?: string;
  /** Every bad field, each once (validation errors). */
  problems?: ApiProblem[];
  [detail: string]: unknown;
}

// ------------------------------------------------------------------ sign-in (/api/auth)

/** The public view of a user: GET /api/auth/me, and `user` of the login answer. */
export { UserView };

/** GET /api/auth/csrf. */
export const CsrfResponse = z.strictObject({ csrf_token: z.string() });
export type CsrfResponse = z.infer<typeof CsrfResponse>;

/** POST /api/auth/login body (from its zod schema) and answer. */
export type { LoginRequest } from '../core/api-requests.js';
export const LoginResponse = z.strictObject({ user: UserView, csrf_token: z.string(), next: z.string() });
export type LoginResponse = z.infer<typeof LoginResponse>;

/** GET /api/auth/sso-providers: the active connections the login page offers. */
export const SsoProviderList = z.strictObject({
  providers: z.array(
    z.strictObject({ id: z.string(), name: z.string(), flows: z.array(z.string()), redirect_url: z.string() }),
  ),
});
export type SsoProviderList = z.infer<typeof SsoProviderList>;

// ------------------------------------------------------------------ accounts (/api/admin/users)

/** One account of GET /api/admin/users (never a password hash). */
export const AdminUser = UserView.extend({
  created_at: z.string(),
  last_login_at: z.string().nullable(),
  /** The account has no password: it signs in by single sign-on only (or not at all where none is set up). */
  sso_only: z.boolean(),
});
export type AdminUser = z.infer<typeof AdminUser>;

/** PATCH /api/admin/users/:id: the account as it now is, and what its deactivation ended. */
export const AdminUserChanged = z.strictObject({
  user: UserView.extend({ created_at: z.string(), last_login_at: z.string().nullable() }),
  sessions_ended: z.number(),
  /** Sandboxes of a deactivated user stopped (null: none asked, or the runtime could not say). */
  sandboxes_ended: z.number().nullable(),
});
export type AdminUserChanged = z.infer<typeof AdminUserChanged>;

/** POST /api/admin/users/:id/password: the user's web sessions ended, and the password when one was generated (shown once). */
export const PasswordReset = z.strictObject({ sessions_ended: z.number(), password: z.string().optional() });
export type PasswordReset = z.infer<typeof PasswordReset>;

export const AdminUserList = z.strictObject({
  users: z.array(AdminUser),
  total: z.number(),
  limit: z.number(),
  offset: z.number(),
  next_offset: z.number().nullable(),
});
export type AdminUserList = z.infer<typeof AdminUserList>;

// ------------------------------------------------------------------ send policy (/api/admin/mail-policy)

/** The server-wide send policy (GET and PUT /api/admin/mail-policy; PUT takes any of the first six fields). */
export const ServerMailPolicyView = MailPolicy.extend({ updated_by: z.number().nullable(), updated_at: z.string() });
export type ServerMailPolicyView = z.infer<typeof ServerMailPolicyView>;

// ------------------------------------------------------------------ chat models (/api/admin/chat-models)

/** One model on offer for chats (the admin API; never the key, only whether there is one). */
export const ChatModelAdminView = ChatModelView.extend({
  /** Chats that name this model. */
  chats: z.number(),
});
export type ChatModelAdminView = z.infer<typeof ChatModelAdminView>;

export const ChatModelAdminList = z.strictObject({ models: z.array(ChatModelAdminView) });
export type ChatModelAdminList = z.infer<typeof ChatModelAdminList>;

/** POST /api/admin/chat-models body (PATCH takes any of these but `id`; `api_key` absent keeps the key, null removes it). */
export type { ChatModelInput as ChatModelAdminInput } from '../core/api-requests.js';

// ------------------------------------------------------------------ usage and budgets (/api/admin/usage, /api/admin/budgets)

export { BudgetView, UsageRowView };

/** GET /api/admin/usage (docs/usage.md "Report"). */
export const UsageReportView = z.strictObject({
  from: z.string(),
  to: z.string(),
  group: z.enum(['user', 'team', 'model']),
  period: z.enum(['day', 'month']),
  /** The priced models' currency (null: no model is priced). */
  currency: z.string().nullable(),
  rows: z.array(UsageRowView),
});
export type UsageReportView = z.infer<typeof UsageReportView>;

/** GET /api/admin/budgets. */
export const BudgetList = z.strictObject({ budgets: z.array(BudgetView) });
export type BudgetList = z.infer<typeof BudgetList>;

/** POST /api/admin/budgets body (PATCH takes `amount` only). */
export interface BudgetInputView {
  scope: 'user' | 'team';
  subject_id: number;
  metric: 'tokens' | 'cost';
  period: 'day' | 'month';
  amount: number;
}

// ------------------------------------------------------------------ live sessions (/api/admin/sessions)

export const LiveSession = z.strictObject({
  id: z.string().nullable(),
  /** The chat's title (null when the chat is gone). */
  title: z.string().nullable(),
  /** The first 12 characters of the container id. */
  container_id: z.string(),
  user_id: z.number().nullable(),
  username: z.string().nullable(),
  display_name: z.string().nullable(),
  status: z.string(),
  stale: z.boolean(),
  turns: z.number(),
  started_at: z.string(),
  last_used_at: z.string(),
  /** Seconds since its last turn ended; null while a turn runs. */
  idle_s: z.number().nullable(),
  /** The sum of its processes' PSS, bytes; null where the host's cgroups cannot be read. */
  memory_bytes: z.number().nullable(),
  /** CPU time the sandbox used since it started, seconds; null as memory_bytes. */
  cpu_seconds: z.number().nullable(),
  /** The running turn: how long it runs and what it waits on (e.g. "waiting for model" 45 s); null when idle. */
  turn: z.strictObject({ running_s: z.number(), phase: z.string(), phase_s: z.number() }).nullable(),
});
export type LiveSession = z.infer<typeof LiveSession>;

export const LiveSessionList = z.strictObject({
  sessions: z.array(LiveSession),
  /** Warm sandboxes not yet claimed by a chat. */
  pool_ready: z.number(),
});
export type LiveSessionList = z.infer<typeof LiveSessionList>;

// ------------------------------------------------------------------ identity (/api/identity)

// The identity admin API's answers (domain/identity/views.ts builds them) are in core/api-types-identity.ts.
export * from '../core/api-types-identity.js';

/** POST /connections (provider, issuer and client_id required) and PATCH /connections/:id body. */
export type { ConnectionRequest } from '../core/api-types-admin.js';

/** Name of an organisation (create and rename), of a team or a policy: 1–100 characters. */
export interface NameRequest {
  name: string;
}

/** POST /organisations/:id/teams and PATCH /teams/:id body. */
export interface TeamRequest {
  name?: string;
  external_group_id?: number | null;
}

/** POST /organisations/:id/agent-policies (name and applies_to required) and PATCH body. */
export type { AgentPolicyRequest } from '../core/api-types-admin.js';

// The data-access admin API's and the audit's shapes (domain/ names them too) are in core/api-types-data-access.ts.
export * from '../core/api-types-data-access.js';

// ------------------------------------------------------------------ turn audit (/api/admin/turns)

// A turn's audit (domain/chat/turn-audit.ts builds it) is in core/api-types-audit.ts.
export * from '../core/api-types-audit.js';

// ------------------------------------------------------------------ a user's own settings (/api/settings)

/** GET and PATCH /api/settings (docs/chat.md "Settings"). */
export const SettingsView = z.strictObject({
  /** The model a new chat starts with (null: the server's default). */
  default_model_id: z.string().nullable(),
  /** False: the account signs in by single sign-on only (no password to change). */
  has_password: z.boolean(),
  password_min: z.number(),
  password_max: z.number(),
});
export type SettingsView = z.infer<typeof SettingsView>;

/** POST /api/admin/connectors and POST …/{id}/refresh: the connector, and the tools its server listed that were left out, with why. */
export const ConnectorSaved = z.strictObject({
  connector: ConnectorView,
  skipped: z.array(z.strictObject({ name: z.string(), reason: z.string() })),
});
export type ConnectorSaved = z.infer<typeof ConnectorSaved>;

/** GET /api/admin/connectors. */
export const ConnectorList = z.strictObject({ connectors: z.array(ConnectorView) });
export type ConnectorList = z.infer<typeof ConnectorList>;

/** /api/admin/connectors (docs/connectors.md): a connector as the admin page shows it, never a secret. */
export type {
  ConnectorAudience,
  ConnectorAuthKind,
  ConnectorTool,
  ConnectorToolMode,
  ConnectorView,
} from '../core/connectors.js';
