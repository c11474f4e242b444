/**
 * The identity admin API's answers built from the stored rows (core/api-types-identity.ts): an IdP
 * connection without its secrets, a sync job, a team with its members, an agent policy with its
 * lists read. The routes (web/identity/) only parse, authorise, call these and answer.
 */
import type { AgentPolicyView, ConnectionView, TeamView } from '../../core/api-types-identity.js';
import type { SyncJobView } from '../../core/api-types.js';
import type { Sql } from '../db/index.js';
import type { SyncJobRow } from './directory-sync-store.js';
import { syncJobSummary } from './job-view.js';
import * as orgs from './orgs.js';
import { hasGroupSync, type IdpConnectionRow } from './store.js';

/** Public view of a connection: never a secret, only whether one is set. */
export function connectionView(c: IdpConnectionRow): ConnectionView {
  return {
    id: c.id,
    provider: c.provider,
    display_name: c.display_name,
    issuer: c.issuer,
    client_id: c.client_id,
    has_client_secret: !!c.client_secret_enc,
    has_service_account: !!c.service_account_enc,
    service_account_email: c.service_account_email,
    delegated_admin_email: c.delegated_admin_email,
    customer: c.customer,
    is_active: c.is_active === 1,
    has_group_sync: hasGroupSync(c),
    last_sync_started_at: c.last_sync_started_at,
    last_sync_finished_at: c.last_sync_finished_at,
    last_sync_succeeded_at: c.last_sync_succeeded_at,
    created_at: c.created_at,
    updated_at: c.updated_at,
  };
}

/** The admin API's view of a sync job: the domain's summary, checked against the API type. */
export function jobView(j: SyncJobRow): SyncJobView {
  return syncJobSummary(j) satisfies SyncJobView;
}

/** A team with its members (ids sorted, and each by name). */
export async function teamView(db: Sql, t: orgs.TeamRow): Promise<TeamView> {
  const members = await orgs.teamMembers(db, t.id);
  return { ...t, member_ids: members.map((m) => m.id).sort((a, b) => a - b), members };
}

/** An agent policy with its teams and its stored lists read. */
export async function policyView(db: Sql, p: orgs.AgentPolicyRow): Promise<AgentPolicyView> {
  return {
    id: p.id,
    organisation_id: p.organisation_id,
    name: p.name,
    applies_to: p.applies_to,
    team_ids: await orgs.policyTeamIds(db, p.id),
    allowed_tools: p.allowed_tools === null ? null : JSON.parse(p.allowed_tools),
    allowed_models: p.allowed_models === null ? null : JSON.parse(p.allowed_models),
    denied_tools: JSON.parse(p.denied_tools),
    denied_models: JSON.parse(p.denied_models),
    mail_allow_domains: JSON.parse(p.mail_allow_domains),
    mail_block_domains: JSON.parse(p.mail_block_domains),
    mail_other: p.mail_other,
    mail_max_recipients: p.mail_max_recipients,
    mail_max_per_hour: p.mail_max_per_hour,
  };
}
