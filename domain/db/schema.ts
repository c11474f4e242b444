import type { ColumnType, Generated, Insertable, Kysely, Selectable, Transaction } from 'kysely';
import type {
  ConnectedAccountsTable,
  IdpConnectionsTable,
  ExternalIdentitiesTable,
  DirectoryUsersTable,
  ExternalGroupsTable,
  ExternalGroupMembersTable,
  OrganisationsTable,
  OrganisationMembersTable,
  TeamsTable,
  TeamMembersTable,
  AgentPoliciesTable,
  AgentPolicyTeamsTable,
  UserAgentPoliciesTable,
  DirectorySyncJobsTable,
  DataRolesTable,
  DataPoliciesTable,
  UserDataRolesTable,
  UserEntitlementsTable,
  MemoriesTable,
} from './schema-identity.js';
import type {
  MailHoldsTable,
  MailServerPolicyTable,
  MailSendLocksTable,
  ProxyRequestsTable,
  NodesTable,
  SandboxesTable,
  LeasesTable,
  NodeNoncesTable,
} from './schema-egress.js';
import type { ConnectorApprovalsTable, ConnectorTokensTable } from './schema-connector-oauth.js';

export type * from './schema-identity.js';
export type * from './schema-egress.js';
export type * from './schema-connector-oauth.js';

/**
 * The tables of Airlock's database, as Kysely sees them. The same schema exists on both engines
 * (embedded SQLite and PostgreSQL; domain/db/migrations holds the DDL of each). Conventions that
 * keep one store module valid on both:
 * - times are ISO-8601 UTC text (`nowIso()`); booleans are integers 0/1;
 * - JSON is stored as text and parsed by the store module that owns the column;
 * - case-insensitive names are compared with `lower()` on both engines (unique indexes on lower());
 * - integer ids come from AUTOINCREMENT (SQLite) or identity columns (PostgreSQL): never reused.
 */

/** A column the database fills in when the insert leaves it out. */
type Default<T> = ColumnType<T, T | undefined, T>;

export interface SchemaMigrationsTable {
  version: number;
  name: string;
  applied_at: Default<string>;
}

export interface UsersTable {
  id: Generated<number>;
  username: string;
  email: string | null;
  display_name: string | null;
  password_hash: string | null;
  is_superuser: Default<number>;
  is_active: Default<number>;
  created_at: Default<string>;
  updated_at: Default<string>;
  last_login_at: string | null;
  /** The model a new chat of this user starts with (chat_models.id; null: the server's default; migration 017). */
  default_model_id: Default<string | null>;
}

export interface WebSessionsTable {
  sid: string;
  user_id: number | null;
  data: string;
  expires_at: number;
}

export interface LoginFailuresTable {
  id: Generated<number>;
  username: string;
  address: string;
  at_ms: number;
}

export interface ActionLogTable {
  id: Generated<number>;
  event: string;
  severity: Default<'info' | 'warning' | 'critical'>;
  actor_id: number | null;
  subject_id: number | null;
  data: Default<string>;
  created_at: Default<string>;
}

export interface ChatSessionsTable {
  id: string;
  user_id: number;
  title: Default<string>;
  created_at: Default<string>;
  updated_at: Default<string>;
  /** The newest turn of the branch shown (migration 012). */
  head_turn_id: string | null;
  /** 1: pinned by its user, listed first (migration 016). */
  pinned: Default<number>;
  /** The chat's model (chat_models.id; null: the server's default; migration 013). */
  model_id: Default<string | null>;
  /** Where the title came from (migration 017): 'message' (provisional), 'model', 'fallback', 'user' (renamed). */
  title_source: Default<'message' | 'model' | 'fallback' | 'user'>;
}

/** The models on offer for chats (migration 013, docs/chat.md "A model per chat"). */
export interface ChatModelsTable {
  id: string;
  label: string;
  provider: 'openai' | 'anthropic' | 'demo';
  model: string;
  base_url: string | null;
  /** The API key, encrypted at rest (Encryptor, AAD `chat_model:<id>:api_key`); null: none. */
  api_key_enc: string | null;
  context_tokens: number;
  /** 1: the model takes image input (migration 085). */
  images: Default<number>;
  enabled: Default<number>;
  /** 1 while the entry follows AIRLOCK_MODEL_* (the `default` entry until an admin changes it). */
  env_managed: Default<number>;
  /** Grows with every change: a sandbox prepared for an older version is replaced. */
  version: Default<number>;
  created_at: Default<string>;
  updated_at: Default<string>;
  /** Price per million input / output tokens, in `price_currency` (migration 050, docs/usage.md); null: unpriced. */
  price_input_per_mtok: number | null;
  price_output_per_mtok: number | null;
  price_currency: string | null;
}

/** What a user's turns on a model used on one UTC day (migration 050, domain/usage.ts). */
export interface UsageDailyTable {
  day: string;
  user_id: number;
  model_id: string;
  turns: Default<number>;
  input_tokens: Default<number>;
  output_tokens: Default<number>;
  tool_calls: Default<number>;
  mails: Default<number>;
  cost: Default<number>;
  /** Seconds a sandbox was held, claim to release (migration 075). */
  sandbox_seconds: Default<number>;
}

/** An admin's cap on a user's or a team's usage (migration 050, domain/usage.ts). */
export interface UsageBudgetsTable {
  id: Generated<number>;
  scope: 'user' | 'team';
  subject_id: number;
  metric: 'tokens' | 'cost';
  period: 'day' | 'month';
  amount: number;
  created_at: Default<string>;
  updated_at: Default<string>;
}

/** Remote MCP servers an admin registers (migration 030, docs/connectors.md). */
export interface ConnectorsTable {
  id: string;
  label: string;
  url: string;
  transport: Default<'streamable_http' | 'sse'>;
  /** JSON: core/connectors.ts ConnectorAudience. */
  audience: Default<string>;
  auth_kind: Default<'none' | 'header' | 'bearer' | 'oauth'>;
  auth_header_name: string | null;
  /** The static secret, encrypted at rest (Encryptor, AAD `connector:<id>:auth_secret`); null: none. */
  auth_secret_enc: string | null;
  oauth_client_id: string | null;
  /** Encrypted like auth_secret_enc (AAD `connector:<id>:oauth_client_secret`). */
  oauth_client_secret_enc: string | null;
  /** JSON: core/connectors.ts ConnectorTool[]. */
  tools: Default<string>;
  tools_refreshed_at: string | null;
  enabled: Default<number>;
  created_at: Default<string>;
  updated_at: Default<string>;
}

export interface ChatTurnsTable {
  id: string;
  session_id: string;
  prompt: string;
  text: Default<string>;
  status: Default<'running' | 'done'>;
  stop_reason: 'end_turn' | 'max_steps' | 'error' | 'cancelled' | null;
  error_code: string | null;
  error_message: string | null;
  started_at: Default<string>;
  ended_at: string | null;
  /** The turn this one continues (null: the chat's first); siblings are edits and regenerates. */
  parent_id: string | null;
  /** Its model-facing items, JSON (core/transcript.ts); null while it runs or for turns from before 012. */
  items: string | null;
  input_tokens: number | null;
  output_tokens: number | null;
}

export interface ChatToolCallsTable {
  id: Generated<number>;
  turn_id: string;
  call_id: string;
  tool: string;
  input: Default<string>;
  status: Default<'running' | 'ok' | 'error' | 'cancelled'>;
  output: string | null;
  error: string | null;
  duration_ms: number | null;
  started_at: Default<string>;
}

/** A read-only link to a chat (migration 018, domain/chat/shares.ts): the token's SHA-256 only. */
export interface ChatSharesTable {
  id: Generated<number>;
  session_id: string;
  user_id: number;
  token_hash: string;
  /** The branch shown when the link was made (its newest turn; null: the chat had none). */
  head_turn_id: string | null;
  created_at: Default<string>;
  revoked_at: string | null;
}

/** A thumbs up or down on an answer, one per user per turn (migration 019, domain/chat/feedback.ts). */
export interface ChatFeedbackTable {
  turn_id: string;
  user_id: number;
  rating: 'up' | 'down';
  note: string | null;
  created_at: Default<string>;
  updated_at: Default<string>;
}

export interface Schema {
  schema_migrations: SchemaMigrationsTable;
  users: UsersTable;
  web_sessions: WebSessionsTable;
  login_failures: LoginFailuresTable;
  action_log: ActionLogTable;
  chat_sessions: ChatSessionsTable;
  chat_turns: ChatTurnsTable;
  chat_tool_calls: ChatToolCallsTable;
  chat_models: ChatModelsTable;
  connectors: ConnectorsTable;
  chat_shares: ChatSharesTable;
  chat_feedback: ChatFeedbackTable;
  usage_daily: UsageDailyTable;
  usage_budgets: UsageBudgetsTable;
  connected_accounts: ConnectedAccountsTable;
  idp_connections: IdpConnectionsTable;
  external_identities: ExternalIdentitiesTable;
  directory_users: DirectoryUsersTable;
  external_groups: ExternalGroupsTable;
  external_group_members: ExternalGroupMembersTable;
  organisations: OrganisationsTable;
  organisation_members: OrganisationMembersTable;
  teams: TeamsTable;
  team_members: TeamMembersTable;
  agent_policies: AgentPoliciesTable;
  agent_policy_teams: AgentPolicyTeamsTable;
  user_agent_policies: UserAgentPoliciesTable;
  directory_sync_jobs: DirectorySyncJobsTable;
  data_roles: DataRolesTable;
  data_policies: DataPoliciesTable;
  user_data_roles: UserDataRolesTable;
  user_entitlements: UserEntitlementsTable;
  memories: MemoriesTable;
  nodes: NodesTable;
  sandboxes: SandboxesTable;
  leases: LeasesTable;
  node_nonces: NodeNoncesTable;
  mail_holds: MailHoldsTable;
  proxy_requests: ProxyRequestsTable;
  mail_server_policy: MailServerPolicyTable;
  mail_send_locks: MailSendLocksTable;
  connector_tokens: ConnectorTokensTable;
  connector_approvals: ConnectorApprovalsTable;
}

/** What every store function takes: the database, or a transaction on it. */
export type Sql = Kysely<Schema>;
export type Tx = Transaction<Schema>;
export type Row<T extends keyof Schema> = Selectable<Schema[T]>;
export type NewRow<T extends keyof Schema> = Insertable<Schema[T]>;
