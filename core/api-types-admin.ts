/**
 * Shapes of the admin API that domain code also names, defined once (like core/api-types.ts):
 * the send policy, the IdP connection and agent-policy request bodies, a user's effective agent
 * policy. domain/ aliases or extends them, web/admin-api.ts re-exports them to the pages
 * (web/ui/src). The answers are zod schemas with a type of the same name (the pages import
 * the types only).
 */
import { z } from 'zod';

/**
 * The user's effective send policy (agent policies and the server's defaults): the proxy applies
 * it to every mail send (docs/proxy.md#send-policy). Not secret; the child never sees it. The
 * server-wide policy (GET /api/admin/mail-policy) and `mail` of GET /api/identity/agent-policy
 * have this shape.
 */
export const MailPolicy = z.strictObject({
  /** Recipient domains always allowed (a domain covers its subdomains). */
  allow_domains: z.array(z.string()),
  /** Recipient domains refused (wins over allow_domains). */
  block_domains: z.array(z.string()),
  /** A recipient in neither list: send, ask the user in the chat first, or refuse. */
  other: z.enum(['allow', 'ask', 'block']),
  /** Most recipients (To + Cc + Bcc) per message. */
  max_recipients: z.number(),
  /** Most messages per hour per user (counted by the daemon over all the user's sessions). */
  max_per_hour: z.number(),
  /** How long a held send waits for the user's decision before it is refused. */
  approval_timeout_s: z.number(),
});
export type MailPolicy = z.infer<typeof MailPolicy>;

/** POST /api/identity/connections (provider, issuer and client_id required) and PATCH /connections/:id body (domain/identity/store.ts saves it). */
export interface ConnectionRequest {
  provider?: 'google';
  display_name?: string;
  issuer?: string;
  client_id?: string;
  client_secret?: string | null;
  /** The service-account key file, as JSON text or the parsed object. */
  service_account_json?: string | Record<string, unknown> | null;
  delegated_admin_email?: string | null;
  customer?: string;
  is_active?: boolean;
}

/** POST /organisations/:id/agent-policies (name and applies_to required) and PATCH body (domain/identity/orgs.ts writes it). */
export interface AgentPolicyRequest {
  name?: string;
  applies_to?: 'all' | 'teams';
  team_ids?: number[];
  allowed_tools?: string[] | null;
  allowed_models?: string[] | null;
  denied_tools?: string[];
  denied_models?: string[];
  mail_allow_domains?: string[];
  mail_block_domains?: string[];
  mail_other?: 'allow' | 'ask' | 'block' | null;
  mail_max_recipients?: number | null;
  mail_max_per_hour?: number | null;
}

/**
 * What a user's agent may use, as the session start applies it (domain/identity/agent-policy.ts
 * computes it; `policy` of GET /api/identity/agent-policy).
 *
 * - `tools` / `models`: the allowed names, or `null` for "no restriction".
 * - `denied_tools` / `denied_models`: names removed even when allowed (deny wins).
 * - `policy_ids`: the AgentPolicy rows that applied (empty: no policy applies, everything allowed).
 *
 * Combination rule: a policy applies to a user when the user is a member of its organisation
 * and the policy is for `all` members, or when the user is in one of the policy's teams.
 * Allow lists are grants and add up (union); a policy with a null list lifts that restriction;
 * deny lists add up and win. A user under no policy is unrestricted.
 */
export const EffectiveAgentPolicyView = z.strictObject({
  tools: z.array(z.string()).nullable(),
  models: z.array(z.string()).nullable(),
  denied_tools: z.array(z.string()),
  denied_models: z.array(z.string()),
  policy_ids: z.array(z.number()),
});
export type EffectiveAgentPolicyView = z.infer<typeof EffectiveAgentPolicyView>;

/** One line of the usage report (domain/usage/report.ts, GET /api/admin/usage). */
export const UsageRowView = z.strictObject({
  period: z.string(),
  group: z.enum(['user', 'team', 'model']),
  /** The user's or team's id, or the model's id; null: users in no team. */
  key: z.union([z.number(), z.string()]).nullable(),
  name: z.string().nullable(),
  turns: z.number(),
  input_tokens: z.number(),
  output_tokens: z.number(),
  tool_calls: z.number(),
  mails: z.number(),
  /** Minutes the user's chats held a sandbox (claim to release, counted on the release's day), one decimal. */
  sandbox_minutes: z.number(),
  cost: z.number(),
});
export type UsageRowView = z.infer<typeof UsageRowView>;

/** A budget and what is used of it in the running period (domain/usage/budgets.ts, /api/admin/budgets). */
export const BudgetView = z.strictObject({
  id: z.number(),
  scope: z.enum(['user', 'team']),
  subject_id: z.number(),
  subject: z.string().nullable(),
  metric: z.enum(['tokens', 'cost']),
  period: z.enum(['day', 'month']),
  amount: z.number(),
  used: z.number(),
  ratio: z.number(),
  since: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type BudgetView = z.infer<typeof BudgetView>;
