/** The operations, the browser UI's files, sign-in and settings, connected accounts and connectors, the agent's memories, and the routes between the nodes of a fleet. One definition per route: docs/architecture.md, "Routes defined once". */
import {
  ApprovalDecisionSchema,
  ConnectAccountSchema,
  LoginSchema,
  SendMessageSchema,
} from '../../core/api-requests.js';
import { ConnectorConnectSchema } from '../connector-oauth-routes.js';
import { MemoryAddSchema } from '../memory-routes.js';
import { PasswordChangeSchema, SettingsChangeSchema } from '../settings-routes.js';
import { UserView } from '../../core/api-types.js';
import { ConnectorConnectionView } from '../../core/connector-oauth.js';
import { CsrfResponse, LoginResponse, SettingsView } from '../admin-api.js';
import {
  AccountDisconnected,
  AccountView,
  AgentMemoryList,
  MemoryEntry,
  MemoryList,
} from '../../core/api-types-account.js';
import {
  AuthorizationUrl,
  ClientMetadata,
  ConnectorConnectionList,
  ConnectorDisconnected,
  HealthView,
  OpenApiDocument,
  OperatorAnswer,
  PasswordChanged,
} from '../platform-api.js';
import { SANDBOX_RESTART } from './admin.js';
import { CHAT_ROUTES } from './chat.js';
import { area, type RouteDef } from './define.js';

/** What sends a request on to the session's node (web/fleet.ts): a forwarded request is answered where it arrives, never sent on. */
const FORWARDING = new Set(['ERR_NODE_UNREACHABLE', 'ERR_NODE_PLAIN_HTTP']);

/**
 * A fleet route answers as the chat route it stands for (web/fleet.ts runs that very route): its
 * answer, status and codes, less those of forwarding it again.
 */
function asChat(method: RouteDef['method'], path: string): Pick<RouteDef, 'response' | 'status' | 'answer' | 'errors'> {
  const def = CHAT_ROUTES.find((d) => d.method === method && d.path === path);
  if (!def) throw new Error(`no chat route ${method} ${path}`);
  const { response, status, answer, errors = [] } = def;
  return {
    ...(response ? { response } : {}),
    ...(status ? { status } : {}),
    ...(answer ? { answer } : {}),
    errors: errors.filter((c) => !FORWARDING.has(c)),
  };
}

export const PLATFORM_ROUTES: readonly RouteDef[] = [
  ...area('ops', [
    {
      method: 'get',
      path: '/healthz',
      who: 'anyone',
      summary:
        'Liveness and database: {"ok":true,"database":"sqlite","schema_version":8,"node":"…"}; 503 ERR_DB_UNAVAILABLE when the database does not answer',
      response: HealthView,
    },
    {
      method: 'get',
      path: '/metrics',
      who: 'anyone',
      summary: 'Prometheus metrics (text format)',
      answer: 'text/plain (Prometheus text format)',
    },
    { method: 'get', path: '/api/openapi.json', who: 'anyone', summary: 'This document', response: OpenApiDocument },
  ]),
  ...area('ui', [
    {
      method: 'get',
      path: '/vendor/chart.umd.js',
      who: 'anyone',
      summary: 'chart.js for the browser UI',
      answer: 'text/javascript',
    },
    {
      method: 'get',
      path: '/favicon.ico',
      who: 'anyone',
      summary: 'The icon (ICO, 16 and 32 px)',
      answer: 'image/x-icon',
    },
  ]),
  ...area('auth', [
    {
      method: 'get',
      path: '/api/auth/csrf',
      who: 'anyone',
      summary: 'Start a session; answer its CSRF token',
      response: CsrfResponse,
    },
    {
      method: 'post',
      path: '/api/auth/login',
      who: 'anyone',
      summary: 'Password login {username, password} → {user, csrf_token}',
      body: LoginSchema,
      response: LoginResponse,
      errors: ['ERR_AUTH_CSRF', 'ERR_AUTH_INVALID_CREDENTIALS', 'ERR_AUTH_RATE_LIMITED'],
    },
    {
      method: 'post',
      path: '/api/auth/logout',
      who: 'anyone',
      summary: 'End the session (204)',
      status: 204,
      errors: ['ERR_AUTH_CSRF'],
    },
    { method: 'get', path: '/api/auth/me', who: 'user', summary: 'The logged-in user', response: UserView },
    {
      method: 'get',
      path: '/api/settings',
      who: 'user',
      summary: 'Your settings: {default_model_id, has_password, password_min, password_max}',
      response: SettingsView,
    },
    {
      method: 'patch',
      path: '/api/settings',
      who: 'user',
      summary: 'The model new chats start with ({default_model_id: id | null})',
      body: SettingsChangeSchema,
      response: SettingsView,
      errors: ['ERR_CHAT_MODEL_NOT_FOUND', 'ERR_POLICY_MODEL_DENIED', 'ERR_CRYPTO_DECRYPT'],
    },
    {
      method: 'post',
      path: '/api/settings/password',
      who: 'user',
      summary: 'Change your password ({current_password, new_password}); your other web sessions end',
      body: PasswordChangeSchema,
      response: PasswordChanged,
      errors: ['ERR_AUTH_NO_PASSWORD', 'ERR_AUTH_WRONG_PASSWORD', 'ERR_AUTH_RATE_LIMITED'],
    },
  ]),
  ...area('account', [
    {
      method: 'get',
      path: '/api/account',
      who: 'user',
      summary: 'Connected workspace account status (no tokens)',
      response: AccountView,
    },
    {
      method: 'post',
      path: '/api/account/connect',
      who: 'user',
      summary: 'Start connecting: → {authorization_url}',
      body: ConnectAccountSchema,
      bodyOptional: true,
      response: AuthorizationUrl,
      errors: ['ERR_ACCOUNT_NOT_CONFIGURED', 'ERR_ACCOUNT_RETURN_TO'],
    },
    {
      method: 'get',
      path: '/api/account/callback',
      who: 'idp-redirect',
      summary: 'OAuth callback: store tokens, 302 return_to',
      status: 302,
      answer: 'redirect',
      errors: [
        'ERR_AUTH_REQUIRED',
        'ERR_ACCOUNT_STATE',
        'ERR_ACCOUNT_DENIED',
        'ERR_ACCOUNT_OAUTH',
        'ERR_ACCOUNT_NOT_CONFIGURED',
      ],
    },
    {
      method: 'delete',
      path: '/api/account',
      who: 'user',
      summary:
        'Disconnect: forget the tokens, revoke at the provider, end warm sandboxes → {connected:false, revoked_at_provider}',
      response: AccountDisconnected,
    },
  ]),
  ...area('memories', [
    {
      method: 'get',
      path: '/api/memories',
      who: 'user',
      summary: 'Own memory entries',
      response: MemoryList,
      errors: ['ERR_CRYPTO_DECRYPT'],
    },
    {
      method: 'post',
      path: '/api/memories',
      who: 'user',
      summary: 'Add a memory entry',
      body: MemoryAddSchema,
      response: MemoryEntry,
      status: 201,
      errors: ['ERR_MEMORY_LIMIT'],
    },
    {
      method: 'delete',
      path: '/api/memories/{id}',
      who: 'user',
      summary: 'Delete an own memory entry',
      status: 204,
      errors: ['ERR_MEMORY_NOT_FOUND'],
    },
    {
      method: 'get',
      path: '/api/agent/memories',
      who: 'agent',
      summary: "The token's user's memories (bi withheld)",
      response: AgentMemoryList,
      errors: ['ERR_MEMORY_SOURCE_REFUSED', 'ERR_CRYPTO_DECRYPT'],
    },
    {
      method: 'get',
      path: '/api/agent/memories/{id}',
      who: 'agent',
      summary: "One memory entry of the token's user",
      response: MemoryEntry,
      errors: ['ERR_MEMORY_NOT_FOUND', 'ERR_MEMORY_SOURCE_REFUSED', 'ERR_CRYPTO_DECRYPT'],
    },
  ]),
  ...area('connectors', [
    {
      method: 'get',
      path: '/api/connections',
      who: 'user',
      summary: 'The OAuth connectors you may use, connected or not (no tokens)',
      response: ConnectorConnectionList,
      errors: ['ERR_CRYPTO_DECRYPT'],
    },
    {
      method: 'get',
      path: '/api/connections/{id}',
      who: 'user',
      summary: 'Your connection to one OAuth connector (no tokens)',
      response: ConnectorConnectionView,
      errors: ['ERR_CONNECTOR_OAUTH_UNKNOWN', 'ERR_CRYPTO_DECRYPT'],
    },
    {
      method: 'post',
      path: '/api/connections/{id}/connect',
      who: 'user',
      summary: 'Start connecting {return_to?}: → {authorization_url} (code + PKCE S256 + resource)',
      body: ConnectorConnectSchema,
      bodyOptional: true,
      response: AuthorizationUrl,
      errors: [
        'ERR_CONNECTOR_OAUTH_UNKNOWN',
        'ERR_CONNECTOR_OAUTH_RETURN_TO',
        'ERR_CONNECTOR_OAUTH_DISCOVERY',
        'ERR_CONNECTOR_OAUTH_CLIENT',
        'ERR_CONNECTOR_OAUTH_REDIRECT',
        'ERR_CRYPTO_DECRYPT',
      ],
    },
    {
      method: 'get',
      path: '/api/connections/callback',
      who: 'idp-redirect',
      summary: "The connector's authorization server's redirect: tokens stored encrypted, 302 return_to?connected=<id>",
      status: 302,
      answer: 'redirect',
      errors: [
        'ERR_AUTH_REQUIRED',
        'ERR_CONNECTOR_OAUTH_STATE',
        'ERR_CONNECTOR_OAUTH_DENIED',
        'ERR_CONNECTOR_OAUTH_ISSUER',
        'ERR_CONNECTOR_OAUTH_TOKEN',
        'ERR_CONNECTOR_OAUTH_ECHO',
        'ERR_CONNECTOR_OAUTH_REDIRECT',
        'ERR_CONNECTOR_OAUTH_DISCOVERY',
        'ERR_CONNECTOR_OAUTH_UNKNOWN',
        'ERR_CRYPTO_DECRYPT',
      ],
    },
    {
      method: 'delete',
      path: '/api/connections/{id}',
      who: 'user',
      summary:
        'Disconnect: revoke at the authorization server (RFC 7009), delete → {connected:false, had, revoked_at_server}',
      response: ConnectorDisconnected,
      errors: ['ERR_CRYPTO_DECRYPT'],
    },
    {
      method: 'get',
      path: '/oauth/client-metadata.json',
      who: 'anyone',
      summary: "Airlock's OAuth client ID metadata document (the URL is the client id)",
      response: ClientMetadata,
    },
  ]),
  ...area('fleet', [
    {
      method: 'post',
      path: '/api/fleet/operator',
      who: 'node',
      summary:
        'An operator command (inspect, logs, restart, kill; the control-socket request union) for a session this node owns',
      response: OperatorAnswer,
      errors: ['ERR_CLI_USAGE', ...SANDBOX_RESTART],
    },
    {
      method: 'post',
      path: '/api/fleet/chat/messages',
      who: 'node',
      summary:
        'A chat turn another node forwards to the owner of the session (same body and NDJSON answer as POST /api/chat/messages)',
      body: SendMessageSchema,
      ...asChat('post', '/api/chat/messages'),
    },
    {
      method: 'get',
      path: '/api/fleet/chat/sessions/{id}/turns/{turnId}/events',
      who: 'node',
      summary: 'Forwarded: follow a turn running on this node',
      ...asChat('get', '/api/chat/sessions/{id}/turns/{turnId}/events'),
    },
    {
      method: 'get',
      path: '/api/fleet/chat/attachments/{name}',
      who: 'node',
      summary: "Forwarded: a chart from the user's workspace on this node",
      ...asChat('get', '/api/chat/attachments/{name}'),
    },
    {
      method: 'get',
      path: '/api/fleet/chat/attachments/{name}/preview',
      who: 'node',
      summary: "Forwarded: the preview of a kept file from the user's workspace on this node",
      ...asChat('get', '/api/chat/attachments/{name}/preview'),
    },
    {
      method: 'post',
      path: '/api/fleet/chat/sessions/{id}/turns/{turnId}/cancel',
      who: 'node',
      summary: 'Forwarded: cancel a turn running on this node',
      ...asChat('post', '/api/chat/sessions/{id}/turns/{turnId}/cancel'),
    },
    {
      method: 'post',
      path: '/api/fleet/chat/sessions/{id}/approvals/{approvalId}',
      who: 'node',
      summary: 'Forwarded: decide a mail send held in a session this node owns',
      body: ApprovalDecisionSchema,
      ...asChat('post', '/api/chat/sessions/{id}/approvals/{approvalId}'),
    },
    {
      method: 'get',
      path: '/api/fleet/chat/sessions/{id}/approvals/{approvalId}/preview',
      who: 'node',
      summary: 'Forwarded: the message of a send held in a session this node owns',
      ...asChat('get', '/api/chat/sessions/{id}/approvals/{approvalId}/preview'),
    },
    {
      method: 'get',
      path: '/api/fleet/chat/sessions/{id}/approvals/{approvalId}/attachments/{n}',
      who: 'node',
      summary: 'Forwarded: an image attachment of a send held in a session this node owns',
      ...asChat('get', '/api/chat/sessions/{id}/approvals/{approvalId}/attachments/{n}'),
    },
  ]),
];
