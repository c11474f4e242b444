// The tables of connected accounts, identity (IdP connections, directory, organisations, teams,
// agent policies, sync jobs), data access and memories: part of `Schema` (schema.ts).
import type { ColumnType, Generated } from 'kysely';

/** A column the database fills in when the insert leaves it out. */
type Default<T> = ColumnType<T, T | undefined, T>;

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
