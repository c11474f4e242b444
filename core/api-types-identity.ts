/**
 * The identity admin API's answers (/api/identity: IdP connections, directory sync, organisations,
 * teams, agent policies): zod schemas with types of the same name. domain/identity/views.ts builds
 * them from the stored rows, the route definitions (web/routes/identity.ts) name the schemas, and
 * web/admin-api.ts re-exports them to the pages (types only there).
 */
import { z } from 'zod';
import { ExternalGroup, SyncJobView } from './api-types.js';
import { EffectiveAgentPolicyView, MailPolicy } from './api-types-admin.js';

/** An IdP connection as the API shows it: secrets only as "stored or not". */
export const ConnectionView = z.strictObject({
  id: z.number(),
  provider: z.string(),
  display_name: z.string(),
  issuer: z.string(),
  client_id: z.string(),
  has_client_secret: z.boolean(),
  has_service_account: z.boolean(),
  service_account_email: z.string().nullable(),
  delegated_admin_email: z.string().nullable(),
  customer: z.string(),
  is_active: z.boolean(),
  has_group_sync: z.boolean(),
  last_sync_started_at: z.string().nullable(),
  last_sync_finished_at: z.string().nullable(),
  last_sync_succeeded_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type ConnectionView = z.infer<typeof ConnectionView>;

export const ConnectionList = z.strictObject({ connections: z.array(ConnectionView) });
export type ConnectionList = z.infer<typeof ConnectionList>;

/** GET /directory-sync (a job's `result` holds counts: users_created, …, fetched: {users, groups, …}). */
export const SyncJobState = z.strictObject({ job: SyncJobView.nullable() });
export type SyncJobState = z.infer<typeof SyncJobState>;

/** POST /directory-sync: the new job, or the one already running (`created: false`). */
export const SyncJobStarted = z.strictObject({ job: SyncJobView, created: z.boolean() });
export type SyncJobStarted = z.infer<typeof SyncJobStarted>;

export const Organisation = z.strictObject({ id: z.number(), name: z.string(), created_at: z.string() });
export type Organisation = z.infer<typeof Organisation>;

export const OrganisationList = z.strictObject({ organisations: z.array(Organisation) });
export type OrganisationList = z.infer<typeof OrganisationList>;

/** GET /organisations/:id/members. */
export const OrgMemberList = z.strictObject({
  members: z.array(z.strictObject({ user_id: z.number(), role: z.enum(['member', 'manager']) })),
});
export type OrgMemberList = z.infer<typeof OrgMemberList>;

/** PUT /organisations/:id/members/:userId: the membership as it now is. */
export const OrgMembership = z.strictObject({
  organisation_id: z.number(),
  user_id: z.number(),
  role: z.enum(['member', 'manager']),
});
export type OrgMembership = z.infer<typeof OrgMembership>;

export const ExternalGroupList = z.strictObject({ groups: z.array(ExternalGroup) });
export type ExternalGroupList = z.infer<typeof ExternalGroupList>;

export const TeamMember = z.strictObject({ id: z.number(), username: z.string(), display_name: z.string().nullable() });
export type TeamMember = z.infer<typeof TeamMember>;

export const TeamView = z.strictObject({
  id: z.number(),
  organisation_id: z.number(),
  name: z.string(),
  /** The directory group the team follows (its members then come from the sync), or null. */
  external_group_id: z.number().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  member_ids: z.array(z.number()),
  members: z.array(TeamMember),
});
export type TeamView = z.infer<typeof TeamView>;

export const TeamList = z.strictObject({ teams: z.array(TeamView) });
export type TeamList = z.infer<typeof TeamList>;

const MailOther = z.enum(['allow', 'ask', 'block']);
export const AgentPolicyView = z.strictObject({
  id: z.number(),
  organisation_id: z.number(),
  name: z.string(),
  applies_to: z.enum(['all', 'teams']),
  team_ids: z.array(z.number()),
  /** null: no restriction. */
  allowed_tools: z.array(z.string()).nullable(),
  allowed_models: z.array(z.string()).nullable(),
  denied_tools: z.array(z.string()),
  denied_models: z.array(z.string()),
  /** Send policy: domains always allowed / refused, any other recipient (null: the server's default), limits (null: the server's). */
  mail_allow_domains: z.array(z.string()),
  mail_block_domains: z.array(z.string()),
  mail_other: MailOther.nullable(),
  mail_max_recipients: z.number().nullable(),
  mail_max_per_hour: z.number().nullable(),
});
export type AgentPolicyView = z.infer<typeof AgentPolicyView>;

export const AgentPolicyList = z.strictObject({ policies: z.array(AgentPolicyView) });
export type AgentPolicyList = z.infer<typeof AgentPolicyList>;

/** GET /agent-catalog: the tools and models a policy may name. */
export const AgentCatalogView = z.strictObject({ tools: z.array(z.string()), models: z.array(z.string()) });
export type AgentCatalogView = z.infer<typeof AgentCatalogView>;

/** GET /agent-policy?user_id=. */
export const EffectiveAgentPolicyResponse = z.strictObject({
  user_id: z.number(),
  policy: EffectiveAgentPolicyView,
  /** The policies that apply (policy.policy_ids), by name with their organisation, in id order. */
  policies: z.array(
    z.strictObject({ id: z.number(), name: z.string(), organisation_id: z.number(), organisation_name: z.string() }),
  ),
  /** The send policy in force for the user: the server's combined with every agent policy that applies. */
  mail: MailPolicy,
});
export type EffectiveAgentPolicyResponse = z.infer<typeof EffectiveAgentPolicyResponse>;
