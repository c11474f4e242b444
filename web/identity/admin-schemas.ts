/** zod schemas of the /api/identity bodies (web/validate.ts turns failures into field messages). */
import { z } from 'zod';
import { MAIL_DOMAIN } from '../../core/config.js';

export const nullableString = (max = 500) => z.string().min(1).max(max).nullable();
export const nameList = z.array(z.string().min(1).max(200)).max(500).nullable();

export const CONNECTION_PROPS = {
  provider: z.enum(['google']),
  display_name: z.string().min(1).max(100),
  issuer: z.url().max(500),
  client_id: z.string().min(1).max(500),
  client_secret: nullableString(2000),
  service_account_json: z.union([z.string().max(20000), z.record(z.string(), z.unknown()), z.null()]),
  delegated_admin_email: z.email().max(320).nullable(),
  customer: z.string().min(1).max(100),
  is_active: z.boolean(),
};
export const CONNECTION_CREATE = z.strictObject(CONNECTION_PROPS).partial().required({ issuer: true, client_id: true });
export const CONNECTION_PATCH = z.strictObject(CONNECTION_PROPS).partial();
export const SYNC_BODY = z.strictObject({ provider: z.string().max(50).optional() });
/** Names of organisations, teams and policies: 1–100 characters with at least one that is not a space. */
export const NAME_MAX = 100;
export const NAME = z.string().min(1).max(NAME_MAX).regex(/\S/, 'must not be only spaces');
export const ORG_BODY = z.strictObject({ name: NAME });
export const MEMBER_BODY = z.strictObject({ role: z.enum(['member', 'manager']).default('member') });
export const TEAM_PROPS = {
  name: NAME,
  external_group_id: z.int().min(1).nullable(),
};
export const TEAM_CREATE = z.strictObject(TEAM_PROPS).partial().required({ name: true });
export const TEAM_PATCH = z.strictObject(TEAM_PROPS).partial();
const MAIL_DOMAIN_ITEM = z
  .string()
  .min(1)
  .max(253)
  .regex(MAIL_DOMAIN, 'a domain name in lower case, such as corp.example');
const NAMES = z.array(z.string().min(1).max(200)).max(500);
export const POLICY_PROPS = {
  name: NAME,
  applies_to: z.enum(['all', 'teams']),
  team_ids: z.array(z.int().min(1)).max(500),
  allowed_tools: nameList,
  allowed_models: nameList,
  denied_tools: NAMES,
  denied_models: NAMES,
  // The send policy (docs/proxy.md#send-policy): domains, lower case, no leading @.
  mail_allow_domains: z.array(MAIL_DOMAIN_ITEM).max(500),
  mail_block_domains: z.array(MAIL_DOMAIN_ITEM).max(500),
  mail_other: z.enum(['allow', 'ask', 'block']).nullable(),
  mail_max_recipients: z.int().min(1).max(500).nullable(),
  mail_max_per_hour: z.int().min(1).max(100000).nullable(),
};
export const POLICY_CREATE = z.strictObject(POLICY_PROPS).partial().required({ name: true, applies_to: true });
export const POLICY_PATCH = z.strictObject(POLICY_PROPS).partial();

export type ConnectionCreate = z.output<typeof CONNECTION_CREATE>;
export type ConnectionPatch = z.output<typeof CONNECTION_PATCH>;
export type PolicyCreate = z.output<typeof POLICY_CREATE>;
export type PolicyPatch = z.output<typeof POLICY_PATCH>;
