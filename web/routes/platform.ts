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
import { area, type RouteDef } from './define.js';

export const PLATFORM_ROUTES: readonly RouteDef[] = [
  ...area('ops', [
    {
      method: 'get',
      path: '/healthz',
      who: 'anyone',
      summary:
        'Liveness and database: {"ok":true,"database":"sqlite","schema_version":8,"node":"…"}; 503 ERR_DB_UNAVAILABLE when the database does not answer',
    },
    { method: 'get', path: '/metrics', who: 'anyone', summary: 'Prometheus metrics (text format)' },
    { method: 'get', path: '/api/openapi.json', who: 'anyone', summary: 'This document' },
  ]),
  ...area('ui', [
    { method: 'get', path: '/vendor/chart.umd.js', who: 'anyone', summary: 'chart.js for the browser UI' },
    { method: 'get', path: '/favicon.ico', who: 'anyone', summary: 'The icon (ICO, 16 and 32 px)' },
  ]),
  ...area('auth', [
    { method: 'get', path: '/api/auth/csrf', who: 'anyone', summary: 'Start a session; answer its CSRF token' },
    {
      method: 'post',
      path: '/api/auth/login',
      who: 'anyone',
      summary: 'Password login {username, password} → {user, csrf_token}',
      body: LoginSchema,
    },
    { method: 'post', path: '/api/auth/logout', who: 'anyone', summary: 'End the session (204)' },
    { method: 'get', path: '/api/auth/me', who: 'user', summary: 'The logged-in user' },
    {
      method: 'get',
      path: '/api/settings',
      who: 'user',
      summary: 'Your settings: {default_model_id, has_password, password_min, password_max}',
    },
    {
      method: 'patch',
      path: '/api/settings',
      who: 'user',
      summary: 'The model new chats start with ({default_model_id: id | null})',
      body: SettingsChangeSchema,
    },
    {
      method: 'post',
      path: '/api/settings/password',
      who: 'user',
      summary: 'Change your password ({current_password, new_password}); your other web sessions end',
      body: PasswordChangeSchema,
    },
  ]),
  ...area('account', [
    { method: 'get', path: '/api/account', who: 'user', summary: 'Connected workspace account status (no tokens)' },
    {
      method: 'post',
      path: '/api/account/connect',
      who: 'user',
      summary: 'Start connecting: → {authorization_url}',
      body: ConnectAccountSchema,
      bodyOptional: true,
    },
    {
      method: 'get',
      path: '/api/account/callback',
      who: 'idp-redirect',
      summary: 'OAuth callback: store tokens, 302 return_to',
    },
    {
      method: 'delete',
      path: '/api/account',
      who: 'user',
      summary:
        'Disconnect: forget the tokens, revoke at the provider, end warm sandboxes → {connected:false, revoked_at_provider}',
    },
  ]),
  ...area('memories', [
    { method: 'get', path: '/api/memories', who: 'user', summary: 'Own memory entries' },
    { method: 'post', path: '/api/memories', who: 'user', summary: 'Add a memory entry', body: MemoryAddSchema },
    { method: 'delete', path: '/api/memories/{id}', who: 'user', summary: 'Delete an own memory entry' },
    { method: 'get', path: '/api/agent/memories', who: 'agent', summary: "The token's user's memories (bi withheld)" },
    { method: 'get', path: '/api/agent/memories/{id}', who: 'agent', summary: "One memory entry of the token's user" },
  ]),
  ...area('connectors', [
    {
      method: 'get',
      path: '/api/connections',
      who: 'user',
      summary: 'The OAuth connectors you may use, connected or not (no tokens)',
    },
    {
      method: 'get',
      path: '/api/connections/{id}',
      who: 'user',
      summary: 'Your connection to one OAuth connector (no tokens)',
    },
    {
      method: 'post',
      path: '/api/connections/{id}/connect',
      who: 'user',
      summary: 'Start connecting {return_to?}: → {authorization_url} (code + PKCE S256 + resource)',
      body: ConnectorConnectSchema,
      bodyOptional: true,
    },
    {
      method: 'get',
      path: '/api/connections/callback',
      who: 'idp-redirect',
      summary: "The connector's authorization server's redirect: tokens stored encrypted, 302 return_to?connected=<id>",
    },
    {
      method: 'delete',
      path: '/api/connections/{id}',
      who: 'user',
      summary:
        'Disconnect: revoke at the authorization server (RFC 7009), delete → {connected:false, had, revoked_at_server}',
    },
    {
      method: 'get',
      path: '/oauth/client-metadata.json',
      who: 'anyone',
      summary: "Airlock's OAuth client ID metadata document (the URL is the client id)",
    },
  ]),
  ...area('fleet', [
    {
      method: 'post',
      path: '/api/fleet/operator',
      who: 'node',
      summary:
        'An operator command (inspect, logs, restart, kill; the control-socket request union) for a session this node owns',
    },
    {
      method: 'post',
      path: '/api/fleet/chat/messages',
      who: 'node',
      summary:
        'A chat turn another node forwards to the owner of the session (same body and NDJSON answer as POST /api/chat/messages)',
      body: SendMessageSchema,
    },
    {
      method: 'get',
      path: '/api/fleet/chat/sessions/{id}/turns/{turnId}/events',
      who: 'node',
      summary: 'Forwarded: follow a turn running on this node',
    },
    {
      method: 'get',
      path: '/api/fleet/chat/attachments/{name}',
      who: 'node',
      summary: "Forwarded: a chart from the user's workspace on this node",
    },
    {
      method: 'get',
      path: '/api/fleet/chat/attachments/{name}/preview',
      who: 'node',
      summary: "Forwarded: the preview of a kept file from the user's workspace on this node",
    },
    {
      method: 'post',
      path: '/api/fleet/chat/sessions/{id}/turns/{turnId}/cancel',
      who: 'node',
      summary: 'Forwarded: cancel a turn running on this node',
    },
    {
      method: 'post',
      path: '/api/fleet/chat/sessions/{id}/approvals/{approvalId}',
      who: 'node',
      summary: 'Forwarded: decide a mail send held in a session this node owns',
      body: ApprovalDecisionSchema,
    },
    {
      method: 'get',
      path: '/api/fleet/chat/sessions/{id}/approvals/{approvalId}/preview',
      who: 'node',
      summary: 'Forwarded: the message of a send held in a session this node owns',
    },
    {
      method: 'get',
      path: '/api/fleet/chat/sessions/{id}/approvals/{approvalId}/attachments/{n}',
      who: 'node',
      summary: 'Forwarded: an image attachment of a send held in a session this node owns',
    },
  ]),
];
