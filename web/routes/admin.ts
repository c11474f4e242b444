/** The superuser admin pages: live sessions, the turn audit, users, models, connectors, usage, budgets, the mail policy. One definition per route: docs/architecture.md, "Routes defined once". */
import { ChatModelChangeSchema, ChatModelCreateSchema } from '../../core/api-requests.js';
import { ConnectorChangeSchema, ConnectorCreateSchema, ConnectorToolModesSchema } from '../../core/connectors.js';
import { MailPolicyChangeSchema } from '../admin-mail-policy-routes.js';
import { BudgetChangeSchema, BudgetCreateSchema } from '../admin-usage-routes.js';
import { PasswordResetSchema, UserChangeSchema } from '../admin-users-routes.js';
import { area, type RouteDef } from './define.js';

export const ADMIN_ROUTES: readonly RouteDef[] = [
  ...area('admin', [
    {
      method: 'get',
      path: '/api/admin/sessions',
      who: 'superuser',
      summary: 'Live sandboxes (503 without a Docker engine)',
    },
    {
      method: 'post',
      path: '/api/admin/sessions/{id}/restart',
      who: 'superuser',
      summary: 'Restart a session with a fresh sandbox (204)',
    },
    {
      method: 'post',
      path: '/api/admin/sessions/{id}/kill',
      who: 'superuser',
      summary: "End a session's sandbox (204)",
    },
    {
      method: 'get',
      path: '/api/admin/turns/{turnId}',
      who: 'superuser',
      summary: "A turn's audit: its tool calls with their upstream requests, and its held mail sends",
    },
    {
      method: 'get',
      path: '/api/admin/users',
      who: 'superuser',
      summary: 'Accounts for user pickers: ?q= (part of username, e-mail or name), limit, offset',
    },
    {
      method: 'patch',
      path: '/api/admin/users/{id}',
      who: 'superuser',
      summary:
        'Deactivate, reactivate, promote or demote ({is_active?, is_superuser?}); never yourself (409 ERR_USER_SELF) nor the last active superuser (409 ERR_USER_LAST_SUPERUSER)',
      body: UserChangeSchema,
    },
    {
      method: 'post',
      path: '/api/admin/users/{id}/password',
      who: 'superuser',
      summary: "Reset a password ({password} sets it; {} generates one, returned once); the user's web sessions end",
      body: PasswordResetSchema,
      bodyOptional: true,
    },
    {
      method: 'get',
      path: '/api/admin/chat-models',
      who: 'superuser',
      summary: 'The models on offer for chats (never a key: has_key), with how many chats use each',
    },
    {
      method: 'post',
      path: '/api/admin/chat-models',
      who: 'superuser',
      summary: 'Add a model ({id, label, provider, model, base_url?, api_key?, context_tokens, enabled?})',
      body: ChatModelCreateSchema,
    },
    {
      method: 'patch',
      path: '/api/admin/chat-models/{id}',
      who: 'superuser',
      summary:
        'Change a model (any field but id; api_key absent keeps the key, null removes it; enabled: false disables)',
      body: ChatModelChangeSchema,
    },
    {
      method: 'delete',
      path: '/api/admin/chat-models/{id}',
      who: 'superuser',
      summary: 'Delete a model (not the default); its chats fall back to the default',
    },
    {
      method: 'get',
      path: '/api/admin/connectors',
      who: 'superuser',
      summary:
        'The connectors (remote MCP servers, docs/connectors.md) with their tools and modes; never a secret (has_secret)',
    },
    { method: 'get', path: '/api/admin/connectors/{id}', who: 'superuser', summary: 'One connector' },
    {
      method: 'post',
      path: '/api/admin/connectors',
      who: 'superuser',
      summary:
        'Add a connector ({id, label, url, transport?, audience?, auth_kind?, auth_header_name?, auth_secret?, oauth_client_id?, oauth_client_secret?, enabled?}); its tools are listed from the server first: a server that does not answer as MCP saves nothing',
      body: ConnectorCreateSchema,
    },
    {
      method: 'patch',
      path: '/api/admin/connectors/{id}',
      who: 'superuser',
      summary: 'Change a connector (any field but id; a secret absent is kept, null removes it)',
      body: ConnectorChangeSchema,
    },
    { method: 'delete', path: '/api/admin/connectors/{id}', who: 'superuser', summary: 'Delete a connector' },
    {
      method: 'post',
      path: '/api/admin/connectors/{id}/refresh',
      who: 'superuser',
      summary: 'List the tools from the server again (modes kept); {connector, skipped}',
    },
    {
      method: 'patch',
      path: '/api/admin/connectors/{id}/tools',
      who: 'superuser',
      summary: 'Set tool modes ({modes: {tool: enabled|disabled|ask}})',
      body: ConnectorToolModesSchema,
    },
    {
      method: 'get',
      path: '/api/admin/usage',
      who: 'superuser',
      summary:
        'Usage of chat turns per UTC day or month and per user, team or model, with cost (?from, to, group, period; docs/usage.md)',
    },
    {
      method: 'get',
      path: '/api/admin/usage.csv',
      who: 'superuser',
      summary: 'The usage report as CSV (same parameters)',
    },
    {
      method: 'get',
      path: '/api/admin/budgets',
      who: 'superuser',
      summary: 'Every budget with what is used of it in the running period',
    },
    {
      method: 'post',
      path: '/api/admin/budgets',
      who: 'superuser',
      summary: 'Add a budget ({scope: user|team, subject_id, metric: tokens|cost, period: day|month, amount})',
      body: BudgetCreateSchema,
    },
    {
      method: 'patch',
      path: '/api/admin/budgets/{id}',
      who: 'superuser',
      summary: 'Change a budget amount ({amount}); counts from the next turn',
      body: BudgetChangeSchema,
    },
    { method: 'delete', path: '/api/admin/budgets/{id}', who: 'superuser', summary: 'Remove a budget' },
    {
      method: 'get',
      path: '/api/admin/mail-policy',
      who: 'superuser',
      summary: 'The server-wide send policy (first from AIRLOCK_MAIL_*)',
    },
    {
      method: 'put',
      path: '/api/admin/mail-policy',
      who: 'superuser',
      summary:
        'Change the server-wide send policy ({allow_domains?, block_domains?, other?, max_recipients?, max_per_hour?, approval_timeout_s?})',
      body: MailPolicyChangeSchema,
    },
  ]),
];
