import { sql } from 'kysely';
import type { EffectiveAgentPolicyView } from '../../core/api-types-admin.js';
import { nowIso, type Row, type Sql } from '../db/index.js';

/** What a user's agent may use, as the session start applies it (shape and combination rule: core/api-types-admin.ts). */
export type EffectiveAgentPolicy = EffectiveAgentPolicyView;

/**
 * The agent policies that apply to a user, oldest first: those of an organisation the user is a
 * member of (directly or through one of its teams) for `all` members, and those whose teams
 * include the user. The one statement of that rule; the tool, model and send policies all read it.
 */
export async function agentPoliciesApplyingTo(db: Sql, userId: number): Promise<Row<'agent_policies'>[]> {
  const { rows } = await sql<Row<'agent_policies'>>`
    SELECT p.* FROM agent_policies p
    WHERE (p.applies_to = 'all' AND (
             EXISTS (SELECT 1 FROM organisation_members m WHERE m.organisation_id = p.organisation_id AND m.user_id = ${userId})
          OR EXISTS (SELECT 1 FROM team_members tm JOIN teams t ON t.id = tm.team_id
                     WHERE t.organisation_id = p.organisation_id AND tm.user_id = ${userId})))
       OR (p.applies_to = 'teams' AND EXISTS (
             SELECT 1 FROM agent_policy_teams pt JOIN team_members tm ON tm.team_id = pt.team_id
             WHERE pt.policy_id = p.id AND tm.user_id = ${userId}))
    ORDER BY p.id`.execute(db);
  return rows;
}

/** The agent policy in force for a user (see EffectiveAgentPolicy for the shape and rules). */
export async function effectiveAgentPolicy(db: Sql, userId: number): Promise<EffectiveAgentPolicy> {
  const rows = await agentPoliciesApplyingTo(db, userId);
  const out: EffectiveAgentPolicy = { tools: null, models: null, denied_tools: [], denied_models: [], policy_ids: [] };
  if (!rows.length) return out;
  const merge = (lists: (string | null)[]): string[] | null => {
    if (lists.some((l) => l === null)) return null;
    return [...new Set(lists.flatMap((l) => JSON.parse(l!) as string[]))].sort();
  };
  out.tools = merge(rows.map((r) => r.allowed_tools));
  out.models = merge(rows.map((r) => r.allowed_models));
  out.denied_tools = [...new Set(rows.flatMap((r) => JSON.parse(r.denied_tools) as string[]))].sort();
  out.denied_models = [...new Set(rows.flatMap((r) => JSON.parse(r.denied_models) as string[]))].sort();
  if (out.tools) out.tools = out.tools.filter((t) => !out.denied_tools.includes(t));
  if (out.models) out.models = out.models.filter((m) => !out.denied_models.includes(m));
  out.policy_ids = rows.map((r) => r.id);
  return out;
}

/**
 * May the user's agent use this tool / model under the policy? A connector's tool
 * (`<connector>__<tool>`, docs/connectors.md) is also matched by `<connector>__*`, which names
 * every tool of that connector.
 */
export function policyAllows(p: EffectiveAgentPolicy, kind: 'tool' | 'model', name: string): boolean {
  const allowed = kind === 'tool' ? p.tools : p.models;
  const denied = kind === 'tool' ? p.denied_tools : p.denied_models;
  const i = kind === 'tool' ? name.indexOf('__') : -1;
  const names = i > 0 ? [name, `${name.slice(0, i)}__*`] : [name];
  return !names.some((n) => denied.includes(n)) && (allowed === null || names.some((n) => allowed.includes(n)));
}

/**
 * Rewrite the stored sandbox policy (user_agent_policies) of these users; writes a row only
 * when the policy changed. Returns the users whose stored policy changed.
 */
export async function rewriteAgentPolicies(db: Sql, userIds: Iterable<number>): Promise<number[]> {
  const changed: number[] = [];
  const now = nowIso();
  for (const id of userIds) {
    const policy = JSON.stringify(await effectiveAgentPolicy(db, id));
    const cur = await db
      .selectFrom('user_agent_policies')
      .select('policy')
      .where('user_id', '=', id)
      .executeTakeFirst();
    if (cur?.policy === policy) continue;
    await db
      .insertInto('user_agent_policies')
      .values({ user_id: id, policy, updated_at: now })
      .onConflict((oc) => oc.column('user_id').doUpdateSet({ policy, updated_at: now }))
      .execute();
    changed.push(id);
  }
  return changed;
}

/**
 * The tools an agent can have: the workspace-suite core agent's (tools/), the host's memory
 * tool and the chart extensions (extensions/). Agent policies may name only these; a new tool
 * is added here as well as in its MCP server.
 */
export const AGENT_TOOLS = [
  'fetch_sheet',
  'search_spreadsheets',
  'send_email',
  'fetch_memory',
  'read_file_table',
  'rasterize_chart',
  'render_chart',
] as const;

/** What a policy may name: the tools above and the models this server can use. */
export interface AgentCatalog {
  tools: string[];
  models: string[];
}

/** One problem of a policy body (field and a reason for people). */
export interface PolicyProblem {
  field: string;
  message: string;
}

/**
 * Check the names of a policy against the catalog: every allowed or denied tool must be a
 * tool that exists, every model one this server offers. A typo would otherwise allow nothing
 * (an allow list of an unknown name) or deny nothing, silently.
 */
export function unknownNames(body: Record<string, unknown>, catalog: AgentCatalog): PolicyProblem[] {
  const out: PolicyProblem[] = [];
  const check = (key: string, label: string, known: string[], kind: string) => {
    const list = body[key];
    if (!Array.isArray(list)) return;
    const bad = [...new Set((list as string[]).filter((n) => !known.includes(n)))];
    if (bad.length) {
      out.push({
        field: key,
        message: `${label}: ${bad
          .slice(0, 5)
          .map((b) => `"${b.slice(0, 60)}"`)
          .join(
            ', ',
          )} ${bad.length > 1 ? `are not ${kind}s` : `is not a ${kind}`} of this server; choose from ${known.join(', ') || 'none'}.`,
      });
    }
  };
  check('allowed_tools', 'Allowed tools', catalog.tools, 'tool');
  check('denied_tools', 'Denied tools', catalog.tools, 'tool');
  check('allowed_models', 'Allowed models', catalog.models, 'model');
  check('denied_models', 'Denied models', catalog.models, 'model');
  return out;
}
