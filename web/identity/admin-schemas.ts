/** JSON schemas of the /api/identity bodies (web/validate.ts turns failures into field messages). */
import { MAIL_DOMAIN } from '../../core/config.js';

export const nullableString = (max = 500) => ({ anyOf: [{ type: 'string', minLength: 1, maxLength: max }, { type: 'null' }] });
export const nameList = { anyOf: [{ type: 'array', maxItems: 500, items: { type: 'string', minLength: 1, maxLength: 200 } }, { type: 'null' }] };

export const CONNECTION_PROPS = {
  provider: { type: 'string', enum: ['google'] },
  display_name: { type: 'string', minLength: 1, maxLength: 100 },
  issuer: { type: 'string', format: 'uri', maxLength: 500 },
  client_id: { type: 'string', minLength: 1, maxLength: 500 },
  client_secret: nullableString(2000),
  service_account_json: { anyOf: [{ type: 'string', maxLength: 20000 }, { type: 'object' }, { type: 'null' }] },
  delegated_admin_email: { anyOf: [{ type: 'string', format: 'email', maxLength: 320 }, { type: 'null' }] },
  customer: { type: 'string', minLength: 1, maxLength: 100 },
  is_active: { type: 'boolean' },
} as const;
export const CONNECTION_CREATE = { type: 'object', additionalProperties: false, required: ['issuer', 'client_id'], properties: CONNECTION_PROPS } as const;
export const CONNECTION_PATCH = { type: 'object', additionalProperties: false, properties: CONNECTION_PROPS } as const;
export const SYNC_BODY = { type: 'object', additionalProperties: false, properties: { provider: { type: 'string', maxLength: 50 } } } as const;
/** Names of organisations, teams and policies: 1–100 characters with at least one that is not a space. */
export const NAME_MAX = 100;
export const NAME = { type: 'string', minLength: 1, maxLength: NAME_MAX, pattern: '\\S', description: 'must not be only spaces' } as const;
export const ORG_BODY = { type: 'object', additionalProperties: false, required: ['name'], properties: { name: NAME } } as const;
export const MEMBER_BODY = { type: 'object', additionalProperties: false, properties: { role: { type: 'string', enum: ['member', 'manager'], default: 'member' } } } as const;
export const TEAM_PROPS = {
  name: NAME,
  external_group_id: { anyOf: [{ type: 'integer', minimum: 1 }, { type: 'null' }] },
} as const;
export const TEAM_CREATE = { type: 'object', additionalProperties: false, required: ['name'], properties: TEAM_PROPS } as const;
export const TEAM_PATCH = { type: 'object', additionalProperties: false, properties: TEAM_PROPS } as const;
const MAIL_DOMAIN_ITEM = {
  type: 'string',
  minLength: 1,
  maxLength: 253,
  pattern: MAIL_DOMAIN.source,
  description: 'a domain name in lower case, such as corp.example',
} as const;
export const POLICY_PROPS = {
  name: NAME,
  applies_to: { type: 'string', enum: ['all', 'teams'] },
  team_ids: { type: 'array', maxItems: 500, items: { type: 'integer', minimum: 1 } },
  allowed_tools: nameList,
  allowed_models: nameList,
  denied_tools: { type: 'array', maxItems: 500, items: { type: 'string', minLength: 1, maxLength: 200 } },
  denied_models: { type: 'array', maxItems: 500, items: { type: 'string', minLength: 1, maxLength: 200 } },
  // The send policy (docs/proxy.md#send-policy): domains, lower case, no leading @.
  mail_allow_domains: { type: 'array', maxItems: 500, items: MAIL_DOMAIN_ITEM },
  mail_block_domains: { type: 'array', maxItems: 500, items: MAIL_DOMAIN_ITEM },
  mail_other: { anyOf: [{ type: 'string', enum: ['allow', 'ask', 'block'] }, { type: 'null' }] },
  mail_max_recipients: { anyOf: [{ type: 'integer', minimum: 1, maximum: 500 }, { type: 'null' }] },
  mail_max_per_hour: { anyOf: [{ type: 'integer', minimum: 1, maximum: 100000 }, { type: 'null' }] },
} as const;
export const POLICY_CREATE = { type: 'object', additionalProperties: false, required: ['name', 'applies_to'], properties: POLICY_PROPS } as const;
export const POLICY_PATCH = { type: 'object', additionalProperties: false, properties: POLICY_PROPS } as const;

