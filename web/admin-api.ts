/**
 * The response (and request) shapes of the sign-in and admin APIs, shared by the server routes
 * (web/auth-routes.ts, web/admin-*-routes.ts, web/identity/, web/data-access/) and the admin pages
 * (web/ui/src/). Types only, importing only the node-free core/api-types*.ts and core/api-requests.ts
 * (the shapes domain/ names too are defined there once): the page bundle takes nothing from here at run
 * time, and the routes check what they send with `satisfies`, so a changed response breaks the
 * build (`tsc` of both sides), not the page.
 */

import type { ChatModelView, ExternalGroup, ModelProvider, SyncJobView, UserView } from '../core/api-types.js';
import type { BudgetView, EffectiveAgentPolicyView, MailPolicy, UsageRowView } from '../core/api-types-admin.js';

export type { ChatModelView, ExternalGroup, ModelProvider, SyncJobView };
export type { SyncJobStatus, SyncJobTrigger } from '../core/api-types.js';
export type { MailPolicy, EffectiveAgentPolicyView };

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
export type { UserView };

/** GET /api/auth/csrf. */
export interface CsrfResponse {
  csrf_token: string;
}

/** POST /api/auth/login body (from its zod schema) and answer. */
export type { LoginRequest } from '../core/api-requests.js';
export interface LoginResponse {
  user: UserView;
  csrf_token: string;
  next: string;
}

/** GET /api/auth/sso-providers: the active connections the login page offers. */
export interface SsoProviderList {
  providers: { id: string; name: string; flows: string[]; redirect_url: string }[];
}

// ------------------------------------------------------------------ accounts (/api/admin/users)

/** One account of GET /api/admin/users (never a password hash). */
export interface AdminUser extends UserView {
  created_at: string;
  last_login_at: string | null;
  /** The account has no password: it signs in by single sign-on only (or not at all where none is set up). */
  sso_only: boolean;
}

export interface AdminUserList {
  users: AdminUser[];
  total: number;
  limit: number;
  offset: number;
  next_offset: number | null;
}

// ------------------------------------------------------------------ send policy (/api/admin/mail-policy)

/** The server-wide send policy (GET and PUT /api/admin/mail-policy; PUT takes any of the first six fields). */
export interface ServerMailPolicyView extends MailPolicy {
  updated_by: number | null;
  updated_at: string;
}

// ------------------------------------------------------------------ chat models (/api/admin/chat-models)

/** One model on offer for chats (the admin API; never the key, only whether there is one). */
export interface ChatModelAdminView extends ChatModelView {
  /** Chats that name this model. */
  chats: number;
}

export interface ChatModelAdminList {
  models: ChatModelAdminView[];
}

/** POST /api/admin/chat-models body (PATCH takes any of these but `id`; `api_key` absent keeps the key, null removes it). */
export type { ChatModelInput as ChatModelAdminInput } from '../core/api-requests.js';

// ------------------------------------------------------------------ usage and budgets (/api/admin/usage, /api/admin/budgets)

export type { BudgetView, UsageRowView };

/** GET /api/admin/usage (docs/usage.md "Report"). */
export interface UsageReportView {
  from: string;
  to: string;
  group: 'user' | 'team' | 'model';
  period: 'day' | 'month';
  /** The priced models' currency (null: no model is priced). */
  currency: string | null;
  rows: UsageRowView[];
}

/** GET /api/admin/budgets. */
export interface BudgetList {
  budgets: BudgetView[];
}

/** POST /api/admin/budgets body (PATCH takes `amount` only). */
export interface BudgetInputView {
  scope: 'user' | 'team';
  subject_id: number;
  metric: 'tokens' | 'cost';
  period: 'day' | 'month';
  amount: number;
}

// ------------------------------------------------------------------ live sessions (/api/admin/sessions)

export interface LiveSession {
  id: string | null;
  /** The chat's title (null when the chat is gone). */
  title: string | null;
  /** The first 12 characters of the container id. */
  container_id: string;
  user_id: number | null;
  username: string | null;
  display_name: string | null;
  status: string;
  stale: boolean;
  turns: number;
  started_at: string;
  last_used_at: string;
  /** Seconds since its last turn ended; null while a turn runs. */
  idle_s: number | null;
  /** The sum of its processes' PSS, bytes; null where the host's cgroups cannot be read. */
  memory_bytes: number | null;
  /** CPU time the sandbox used since it started, seconds; null as memory_bytes. */
  cpu_seconds: number | null;
  /** The running turn: how long it runs and what it waits on (e.g. "waiting for model" 45 s); null when idle. */
  turn: { running_s: number; phase: string; phase_s: number } | null;
}

export interface LiveSessionList {
  sessions: LiveSession[];
  /** Warm sandboxes not yet claimed by a chat. */
  pool_ready: number;
}

// ------------------------------------------------------------------ identity (/api/identity)

/** An IdP connection as the API shows it: secrets only as "stored or not". */
export interface ConnectionView {
  id: number;
  provider: string;
  display_name: string;
  issuer: string;
  client_id: string;
  has_client_secret: boolean;
  has_service_account: boolean;
  service_account_email: string | null;
  delegated_admin_email: string | null;
  customer: string;
  is_active: boolean;
  has_group_sync: boolean;
  last_sync_started_at: string | null;
  last_sync_finished_at: string | null;
  last_sync_succeeded_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface ConnectionList {
  connections: ConnectionView[];
}

/** POST /connections (provider, issuer and client_id required) and PATCH /connections/:id body. */
export type { ConnectionRequest } from '../core/api-types-admin.js';

/** GET /directory-sync (a job's `result` holds counts: users_created, …, fetched: {users, groups, …}). */
export interface SyncJobState {
  job: SyncJobView | null;
}

/** POST /directory-sync: the new job, or the one already running (`created: false`). */
export interface SyncJobStarted {
  job: SyncJobView;
  created: boolean;
}

export interface Organisation {
  id: number;
  name: string;
  created_at: string;
}

export interface OrganisationList {
  organisations: Organisation[];
}

/** Name of an organisation (create and rename), of a team or a policy: 1–100 characters. */
export interface NameRequest {
  name: string;
}

export interface ExternalGroupList {
  groups: ExternalGroup[];
}

export interface TeamMember {
  id: number;
  username: string;
  display_name: string | null;
}

export interface TeamView {
  id: number;
  organisation_id: number;
  name: string;
  /** The directory group the team follows (its members then come from the sync), or null. */
  external_group_id: number | null;
  created_at: string;
  updated_at: string;
  member_ids: number[];
  members: TeamMember[];
}

export interface TeamList {
  teams: TeamView[];
}

/** POST /organisations/:id/teams and PATCH /teams/:id body. */
export interface TeamRequest {
  name?: string;
  external_group_id?: number | null;
}

export interface AgentPolicyView {
  id: number;
  organisation_id: number;
  name: string;
  applies_to: 'all' | 'teams';
  team_ids: number[];
  /** null: no restriction. */
  allowed_tools: string[] | null;
  allowed_models: string[] | null;
  denied_tools: string[];
  denied_models: string[];
  /** Send policy: domains always allowed / refused, any other recipient (null: the server's default), limits (null: the server's). */
  mail_allow_domains: string[];
  mail_block_domains: string[];
  mail_other: 'allow' | 'ask' | 'block' | null;
  mail_max_recipients: number | null;
  mail_max_per_hour: number | null;
}

export interface AgentPolicyList {
  policies: AgentPolicyView[];
}

/** POST /organisations/:id/agent-policies (name and applies_to required) and PATCH body. */
export type { AgentPolicyRequest } from '../core/api-types-admin.js';

/** GET /agent-catalog: the tools and models a policy may name. */
export interface AgentCatalogView {
  tools: string[];
  models: string[];
}

/** GET /agent-policy?user_id=. */
export interface EffectiveAgentPolicyResponse {
  user_id: number;
  policy: EffectiveAgentPolicyView;
  /** The policies that apply (policy.policy_ids), by name with their organisation, in id order. */
  policies: { id: number; name: string; organisation_id: number; organisation_name: string }[];
  /** The send policy in force for the user: the server's combined with every agent policy that applies. */
  mail: MailPolicy;
}

// The data-access admin API's and the audit's shapes (domain/ names them too) are in core/api-types-data-access.ts.
export type * from '../core/api-types-data-access.js';

// ------------------------------------------------------------------ a user's own settings (/api/settings)

/** GET and PATCH /api/settings (docs/chat.md "Settings"). */
export interface SettingsView {
  /** The model a new chat starts with (null: the server's default). */
  default_model_id: string | null;
  /** False: the account signs in by single sign-on only (no password to change). */
  has_password: boolean;
  password_min: number;
  password_max: number;
}

/** /api/admin/connectors (docs/connectors.md): a connector as the admin page shows it, never a secret. */
export type {
  ConnectorAudience,
  ConnectorAuthKind,
  ConnectorTool,
  ConnectorToolMode,
  ConnectorView,
} from '../core/connectors.js';
