/** The superuser admin pages: live sessions, the turn audit, users, models, connectors, usage, budgets, the mail policy. One definition per route: docs/architecture.md, "Routes defined once". */
import { ChatModelChangeSchema, ChatModelCreateSchema } from '../../core/api-requests.js';
import { TurnAudit } from '../../core/api-types-audit.js';
import {
  ConnectorChangeSchema,
  ConnectorCreateSchema,
  ConnectorToolModesSchema,
  ConnectorView,
} from '../../core/connectors.js';
import {
  AdminUserChanged,
  AdminUserList,
  BudgetList,
  BudgetView,
  ChatModelAdminList,
  ChatModelAdminView,
  ConnectorList,
  ConnectorSaved,
  LiveSessionList,
  PasswordReset,
  ServerMailPolicyView,
  UsageReportView,
} from '../admin-api.js';
import { MailPolicyChangeSchema } from '../admin-mail-policy-routes.js';
import { BudgetChangeSchema, BudgetCreateSchema } from '../admin-usage-routes.js';
import { PasswordResetSchema, UserChangeSchema } from '../admin-users-routes.js';
import type { ErrorCode } from '../../core/index.js';
import { area, type RouteDef } from './define.js';

/**
 * What restarting a session's sandbox is refused with (daemon/runtime/session-ops.ts restart): no
 * such session, a turn running in it, the daemon closing, and what starting its new sandbox fails
 * with (the preparer's model checks in daemon/host/overlay.ts, daemon/runtime/session-start.ts).
 */
export const SANDBOX_RESTART: readonly ErrorCode[] = [
  'ERR_SESSION_NOT_FOUND',
  'ERR_SESSION_BUSY',
  'ERR_SESSION_UNAVAILABLE',
  'ERR_POLICY_MODEL_DENIED',
  'ERR_CRYPTO_DECRYPT',
  'ERR_AGENT_CONFIG',
  'ERR_SANDBOX_START',
  'ERR_SANDBOX_UNREACHABLE',
  'ERR_SANDBOX_TIMEOUT',
  'ERR_SANDBOX_LOST',
  'ERR_SANDBOX_WORKSPACE',
];

/** What listing a connector's tools from its server is refused with (domain/connectors: a credential that fails is a failed discovery too). */
const DISCOVERY: readonly ErrorCode[] = ['ERR_CONNECTOR_DISCOVERY', 'ERR_CONNECTOR_TOOLS_INVALID'];

/** Every chat-model route first makes sure the default exists, reading its key (domain/chat/models.ts resolveModel). */
const MODEL_KEY: ErrorCode = 'ERR_CRYPTO_DECRYPT';

export const ADMIN_ROUTES: readonly RouteDef[] = [
  ...area('admin', [
    {
      method: 'get',
      path: '/api/admin/sessions',
      who: 'superuser',
      summary: 'Live sandboxes (503 without a Docker engine)',
      response: LiveSessionList,
      errors: ['ERR_RUNTIME_UNAVAILABLE'],
    },
    {
      method: 'post',
      path: '/api/admin/sessions/{id}/restart',
      who: 'superuser',
      summary: 'Restart a session with a fresh sandbox (204)',
      status: 204,
      errors: ['ERR_RUNTIME_UNAVAILABLE', ...SANDBOX_RESTART],
    },
    {
      method: 'post',
      path: '/api/admin/sessions/{id}/kill',
      who: 'superuser',
      summary: "End a session's sandbox (204)",
      status: 204,
      errors: ['ERR_RUNTIME_UNAVAILABLE', 'ERR_SESSION_NOT_FOUND'],
    },
    {
      method: 'get',
      path: '/api/admin/turns/{turnId}',
      who: 'superuser',
      summary: "A turn's audit: its tool calls with their upstream requests, and its held mail sends",
      response: TurnAudit,
      errors: ['ERR_CHAT_TURN_NOT_FOUND'],
    },
    {
      method: 'get',
      path: '/api/admin/users',
      who: 'superuser',
      summary: 'Accounts for user pickers: ?q= (part of username, e-mail or name), limit, offset',
      response: AdminUserList,
    },
    {
      method: 'patch',
      path: '/api/admin/users/{id}',
      who: 'superuser',
      summary:
        'Deactivate, reactivate, promote or demote ({is_active?, is_superuser?}); never yourself (409 ERR_USER_SELF) nor the last active superuser (409 ERR_USER_LAST_SUPERUSER)',
      body: UserChangeSchema,
      response: AdminUserChanged,
      errors: ['ERR_USER_NOT_FOUND', 'ERR_USER_SELF', 'ERR_USER_LAST_SUPERUSER'],
    },
    {
      method: 'post',
      path: '/api/admin/users/{id}/password',
      who: 'superuser',
      summary: "Reset a password ({password} sets it; {} generates one, returned once); the user's web sessions end",
      body: PasswordResetSchema,
      bodyOptional: true,
      response: PasswordReset,
      errors: ['ERR_USER_NOT_FOUND', 'ERR_USER_SELF'],
    },
    {
      method: 'get',
      path: '/api/admin/chat-models',
      who: 'superuser',
      summary: 'The models on offer for chats (never a key: has_key), with how many chats use each',
      response: ChatModelAdminList,
      errors: [MODEL_KEY],
    },
    {
      method: 'post',
      path: '/api/admin/chat-models',
      who: 'superuser',
      summary: 'Add a model ({id, label, provider, model, base_url?, api_key?, context_tokens, enabled?})',
      body: ChatModelCreateSchema,
      response: ChatModelAdminView,
      status: 201,
      errors: ['ERR_CHAT_MODEL_EXISTS', 'ERR_USAGE_CURRENCY_MISMATCH', MODEL_KEY],
    },
    {
      method: 'patch',
      path: '/api/admin/chat-models/{id}',
      who: 'superuser',
      summary:
        'Change a model (any field but id; api_key absent keeps the key, null removes it; enabled: false disables)',
      body: ChatModelChangeSchema,
      response: ChatModelAdminView,
      errors: ['ERR_CHAT_MODEL_NOT_FOUND', 'ERR_CHAT_MODEL_DEFAULT', 'ERR_USAGE_CURRENCY_MISMATCH', MODEL_KEY],
    },
    {
      method: 'delete',
      path: '/api/admin/chat-models/{id}',
      who: 'superuser',
      summary: 'Delete a model (not the default); its chats fall back to the default',
      status: 204,
      errors: ['ERR_CHAT_MODEL_NOT_FOUND', 'ERR_CHAT_MODEL_DEFAULT', MODEL_KEY],
    },
    {
      method: 'get',
      path: '/api/admin/connectors',
      who: 'superuser',
      summary:
        'The connectors (remote MCP servers, docs/connectors.md) with their tools and modes; never a secret (has_secret)',
      response: ConnectorList,
    },
    {
      method: 'get',
      path: '/api/admin/connectors/{id}',
      who: 'superuser',
      summary: 'One connector',
      response: ConnectorView,
      errors: ['ERR_CONNECTOR_NOT_FOUND'],
    },
    {
      method: 'post',
      path: '/api/admin/connectors',
      who: 'superuser',
      summary:
        'Add a connector ({id, label, url, transport?, audience?, auth_kind?, auth_header_name?, auth_secret?, oauth_client_id?, oauth_client_secret?, enabled?}); its tools are listed from the server first: a server that does not answer as MCP saves nothing',
      body: ConnectorCreateSchema,
      response: ConnectorSaved,
      status: 201,
      errors: ['ERR_CONNECTOR_EXISTS', 'ERR_CONNECTOR_URL', 'ERR_CONNECTOR_AUTH', ...DISCOVERY],
    },
    {
      method: 'patch',
      path: '/api/admin/connectors/{id}',
      who: 'superuser',
      summary: 'Change a connector (any field but id; a secret absent is kept, null removes it)',
      body: ConnectorChangeSchema,
      response: ConnectorView,
      errors: ['ERR_CONNECTOR_NOT_FOUND', 'ERR_CONNECTOR_URL', 'ERR_CONNECTOR_AUTH'],
    },
    {
      method: 'delete',
      path: '/api/admin/connectors/{id}',
      who: 'superuser',
      summary: 'Delete a connector',
      status: 204,
      errors: ['ERR_CONNECTOR_NOT_FOUND'],
    },
    {
      method: 'post',
      path: '/api/admin/connectors/{id}/refresh',
      who: 'superuser',
      summary: 'List the tools from the server again (modes kept); {connector, skipped}',
      response: ConnectorSaved,
      errors: ['ERR_CONNECTOR_NOT_FOUND', 'ERR_CONNECTOR_NOT_CONNECTED', 'ERR_CRYPTO_DECRYPT', ...DISCOVERY],
    },
    {
      method: 'patch',
      path: '/api/admin/connectors/{id}/tools',
      who: 'superuser',
      summary: 'Set tool modes ({modes: {tool: enabled|disabled|ask}})',
      body: ConnectorToolModesSchema,
      response: ConnectorView,
      errors: ['ERR_CONNECTOR_NOT_FOUND', 'ERR_CONNECTOR_TOOL_NOT_FOUND'],
    },
    {
      method: 'get',
      path: '/api/admin/usage',
      who: 'superuser',
      summary:
        'Usage of chat turns per UTC day or month and per user, team or model, with cost (?from, to, group, period; docs/usage.md)',
      response: UsageReportView,
      errors: ['ERR_USAGE_BAD_QUERY'],
    },
    {
      method: 'get',
      path: '/api/admin/usage.csv',
      who: 'superuser',
      summary: 'The usage report as CSV (same parameters)',
      answer: 'text/csv (an attachment)',
      errors: ['ERR_USAGE_BAD_QUERY'],
    },
    {
      method: 'get',
      path: '/api/admin/budgets',
      who: 'superuser',
      summary: 'Every budget with what is used of it in the running period',
      response: BudgetList,
    },
    {
      method: 'post',
      path: '/api/admin/budgets',
      who: 'superuser',
      summary: 'Add a budget ({scope: user|team, subject_id, metric: tokens|cost, period: day|month, amount})',
      body: BudgetCreateSchema,
      response: BudgetView,
      status: 201,
      errors: ['ERR_USAGE_BUDGET_EXISTS', 'ERR_USAGE_SUBJECT_NOT_FOUND'],
    },
    {
      method: 'patch',
      path: '/api/admin/budgets/{id}',
      who: 'superuser',
      summary: 'Change a budget amount ({amount}); counts from the next turn',
      body: BudgetChangeSchema,
      response: BudgetView,
      errors: ['ERR_USAGE_BUDGET_NOT_FOUND'],
    },
    {
      method: 'delete',
      path: '/api/admin/budgets/{id}',
      who: 'superuser',
      summary: 'Remove a budget',
      status: 204,
      errors: ['ERR_USAGE_BUDGET_NOT_FOUND'],
    },
    {
      method: 'get',
      path: '/api/admin/mail-policy',
      who: 'superuser',
      summary: 'The server-wide send policy (first from AIRLOCK_MAIL_*)',
      response: ServerMailPolicyView,
    },
    {
      method: 'put',
      path: '/api/admin/mail-policy',
      who: 'superuser',
      summary:
        'Change the server-wide send policy ({allow_domains?, block_domains?, other?, max_recipients?, max_per_hour?, approval_timeout_s?})',
      body: MailPolicyChangeSchema,
      response: ServerMailPolicyView,
    },
  ]),
];
