import type { ColumnType, Generated, Insertable, Kysely, Selectable, Transaction } from 'kysely';

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
  enabled: Default<number>;
  /** 1 while the entry follows AIRLOCK_MODEL_* (the `default` entry until an admin changes it). */
  env_managed: Default<number>;
  /** Grows with every change: a sandbox prepared for an older version is replaced. */
  version: Default<number>;
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

export interface ConnectedAccountsTable {
  user_id: number;
  provider: Default<string>;
  email: string | null;
  scopes: string;
  refresh_token_enc: string | null;
  access_token_enc: string | null;
  access_expires_at: number | null;
  connected_at: Default<string>;
  updated_at: Default<string>;
}

export interface IdpConnectionsTable {
  id: Generated<number>;
  provider: string;
  display_name: string;
  issuer: string;
  client_id: string;
  client_secret_enc: string | null;
  service_account_enc: string | null;
  service_account_email: string | null;
  delegated_admin_email: string | null;
  customer: Default<string>;
  is_active: Default<number>;
  last_sync_started_at: string | null;
  last_sync_finished_at: string | null;
  last_sync_succeeded_at: string | null;
  created_at: Default<string>;
  updated_at: Default<string>;
}

export interface ExternalIdentitiesTable {
  id: Generated<number>;
  user_id: number;
  connection_id: number;
  sub: string;
  email: string | null;
  created_at: Default<string>;
  updated_at: Default<string>;
  last_login_at: string | null;
}

export interface DirectoryUsersTable {
  connection_id: number;
  directory_id: string;
  user_id: number;
  email: string;
  full_name: string | null;
  suspended: Default<number>;
  archived: Default<number>;
  present: Default<number>;
  deactivated_by_sync: Default<number>;
  synced_at: string;
}

export interface ExternalGroupsTable {
  id: Generated<number>;
  connection_id: number;
  directory_id: string;
  email: string;
  name: string;
  description: Default<string>;
  synced_at: string;
}

export interface ExternalGroupMembersTable {
  group_id: number;
  user_id: number;
}

export interface OrganisationsTable {
  id: Generated<number>;
  name: string;
  created_at: Default<string>;
}

export interface OrganisationMembersTable {
  organisation_id: number;
  user_id: number;
  role: Default<'member' | 'manager'>;
}

export interface TeamsTable {
  id: Generated<number>;
  organisation_id: number;
  name: string;
  external_group_id: number | null;
  created_at: Default<string>;
  updated_at: Default<string>;
}

export interface TeamMembersTable {
  team_id: number;
  user_id: number;
}

export interface AgentPoliciesTable {
  id: Generated<number>;
  organisation_id: number;
  name: string;
  applies_to: 'all' | 'teams';
  allowed_tools: string | null;
  allowed_models: string | null;
  denied_tools: Default<string>;
  denied_models: Default<string>;
  /** Send policy (JSON lists; null: the server's default). */
  mail_allow_domains: Default<string>;
  mail_block_domains: Default<string>;
  mail_other: 'allow' | 'ask' | 'block' | null;
  mail_max_recipients: number | null;
  mail_max_per_hour: number | null;
  created_at: Default<string>;
  updated_at: Default<string>;
}

export interface AgentPolicyTeamsTable {
  policy_id: number;
  team_id: number;
}

export interface UserAgentPoliciesTable {
  user_id: number;
  policy: string;
  updated_at: string;
}

export interface DirectorySyncJobsTable {
  id: Generated<number>;
  connection_id: number;
  status: Default<'pending' | 'running' | 'succeeded' | 'failed'>;
  trigger: 'manual' | 'scheduled';
  requested_by: number | null;
  result: string | null;
  error: string | null;
  progress: string | null;
  created_at: Default<string>;
  started_at: string | null;
  finished_at: string | null;
  owner_id: string | null;
  owner_pid: number | null;
  owner_host: string | null;
  heartbeat_at: string | null;
}

export interface DataRolesTable {
  id: Generated<number>;
  name: string;
  description: Default<string>;
  builtin: Default<number>;
  created_at: Default<string>;
  updated_at: Default<string>;
}

export interface DataPoliciesTable {
  id: Generated<number>;
  role_id: number;
  table_name: string;
  allowed_columns: string;
  row_filter: Default<string>;
  created_at: Default<string>;
  updated_at: Default<string>;
}

export interface UserDataRolesTable {
  id: Generated<number>;
  user_id: number;
  role_id: number;
  assigned_by: number | null;
  created_at: Default<string>;
}

export interface UserEntitlementsTable {
  user_id: number;
  name: string;
  granted_at: Default<string>;
}

export interface MemoriesTable {
  id: Generated<number>;
  user_id: number;
  content: string;
  source: Default<string>;
  created_at: Default<string>;
}

/** A mail send the proxy held for the daemon, and what became of it (docs/audit.md). */
export interface MailHoldsTable {
  id: string;
  session_id: string;
  user_id: number;
  node_id: string;
  turn_id: string | null;
  call_id: string | null;
  verdict: 'allow' | 'ask';
  /** JSON list of every recipient; `asked`: the ones outside the allowed domains. */
  recipients: string;
  asked: string;
  subject: string;
  /** JSON list of { name, size }. */
  attachments: string;
  bytes: number;
  state: 'pending' | 'sent' | 'approved' | 'denied' | 'timed_out' | 'refused';
  scope: 'once' | 'recipient' | null;
  code: string | null;
  created_at: Default<string>;
  decided_at: string | null;
}

/** The server-wide send policy: one row, id 1 (docs/proxy.md#send-policy). */
export interface MailServerPolicyTable {
  id: number;
  /** JSON lists of domains. */
  allow_domains: string;
  block_domains: string;
  other: 'allow' | 'ask' | 'block';
  max_recipients: number;
  max_per_hour: number;
  approval_timeout_s: number;
  updated_by: number | null;
  updated_at: Default<string>;
}

/** A user's lock row for reserving hourly mail slots (docs/proxy.md#send-policy). */
export interface MailSendLocksTable {
  user_id: number;
  reserved_at: string;
}

/** One request the in-sandbox proxy decided on (docs/audit.md). */
export interface ProxyRequestsTable {
  id: Generated<number>;
  session_id: string;
  user_id: number;
  node_id: string;
  turn_id: string | null;
  call_id: string | null;
  route: string | null;
  method: string | null;
  template: string | null;
  outcome: 'forwarded' | 'refused' | 'upstream_error';
  status: number;
  code: string | null;
  req_bytes: number | null;
  res_bytes: number | null;
  ms: number | null;
  recipients: number | null;
  created_at: Default<string>;
}

/** One row per `airlock serve` process that ever joined the fleet (docs/deploy.md). */
export interface NodesTable {
  id: string;
  url: string;
  version: string;
  capacity: number;
  sessions: Default<number>;
  started_at: string;
  heartbeat_at: string;
}

/** The live sandbox of a chat session and the node that owns it. */
export interface SandboxesTable {
  session_id: string;
  user_id: number;
  node_id: string;
  container_id: string | null;
  state: 'starting' | 'live' | 'lost';
  created_at: Default<string>;
  updated_at: Default<string>;
}

/** A named lock with a lease, for work done once across the fleet. */
export interface LeasesTable {
  name: string;
  holder: string;
  expires_at: number;
}

/** A nonce of a signed request between nodes, kept until its window ends (migration 010). */
export interface NodeNoncesTable {
  nonce: string;
  node_id: string;
  /** unix ms */
  expires_at: number;
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
  chat_shares: ChatSharesTable;
  chat_feedback: ChatFeedbackTable;
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
}

/** What every store function takes: the database, or a transaction on it. */
export type Sql = Kysely<Schema>;
export type Tx = Transaction<Schema>;
export type Row<T extends keyof Schema> = Selectable<Schema[T]>;
export type NewRow<T extends keyof Schema> = Insertable<Schema[T]>;
