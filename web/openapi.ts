/**
 * The OpenAPI 3.1 document of the web app, served at GET /api/openapi.json. One row per
 * operation; docs/api.md has the prose (bodies, answers, error codes). test/integration/openapi.test.ts
 * validates the document (@readme/openapi-parser) and walks the express router at run time: a new
 * route fails it until its row is added here, and a row without a route fails it too.
 */

type Who = 'anyone' | 'user' | 'superuser' | 'manager' | 'agent' | 'internal' | 'idp-redirect' | 'node';

/** [method, path (OpenAPI form), tag, who, summary] */
export const OPERATIONS: readonly (readonly [string, string, string, Who, string])[] = [
  ['get', '/healthz', 'ops', 'anyone', 'Liveness and database: {"ok":true,"database":"sqlite","schema_version":8,"node":"…"}; 503 ERR_DB_UNAVAILABLE when the database does not answer'],
  ['get', '/metrics', 'ops', 'anyone', 'Prometheus metrics (text format)'],
  ['get', '/api/openapi.json', 'ops', 'anyone', 'This document'],
  ['get', '/vendor/chart.umd.js', 'ui', 'anyone', 'chart.js for the browser UI'],
  ['get', '/favicon.ico', 'ui', 'anyone', 'The icon (ICO, 16 and 32 px)'],

  ['get', '/api/auth/csrf', 'auth', 'anyone', 'Start a session; answer its CSRF token'],
  ['post', '/api/auth/login', 'auth', 'anyone', 'Password login {username, password} → {user, csrf_token}'],
  ['post', '/api/auth/logout', 'auth', 'anyone', 'End the session (204)'],
  ['get', '/api/auth/me', 'auth', 'user', 'The logged-in user'],
  ['get', '/api/settings', 'auth', 'user', 'Your settings: {default_model_id, has_password, password_min, password_max}'],
  ['patch', '/api/settings', 'auth', 'user', 'The model new chats start with ({default_model_id: id | null})'],
  ['post', '/api/settings/password', 'auth', 'user', 'Change your password ({current_password, new_password}); your other web sessions end'],
  ['get', '/api/auth/sso-providers', 'sso', 'anyone', 'Active single sign-on providers'],
  ['post', '/_login/browser/v1/auth/provider/redirect', 'sso', 'anyone', 'Form post: start an OIDC login (303 to the IdP)'],
  ['get', '/accounts/{provider}/login/callback/', 'sso', 'idp-redirect', 'OIDC callback: code exchange, session, 303 to callback_url'],

  ['get', '/api/identity/connections', 'identity', 'superuser', 'List IdP connections (secrets write-only)'],
  ['post', '/api/identity/connections', 'identity', 'superuser', 'Create an IdP connection'],
  ['get', '/api/identity/connections/{id}', 'identity', 'superuser', 'One IdP connection'],
  ['patch', '/api/identity/connections/{id}', 'identity', 'superuser', 'Update an IdP connection'],
  ['delete', '/api/identity/connections/{id}', 'identity', 'superuser', 'Delete an IdP connection'],
  ['post', '/api/identity/directory-sync', 'identity', 'superuser', 'Start a directory sync (202 new job, 200 already running)'],
  ['get', '/api/identity/directory-sync', 'identity', 'superuser', 'Latest directory-sync job'],
  ['get', '/api/identity/organisations', 'identity', 'user', 'Organisations (own; superuser: all)'],
  ['post', '/api/identity/organisations', 'identity', 'superuser', 'Create an organisation'],
  ['patch', '/api/identity/organisations/{id}', 'identity', 'superuser', 'Rename an organisation {name}'],
  ['delete', '/api/identity/organisations/{id}', 'identity', 'superuser', 'Delete an organisation with its teams and agent policies'],
  ['get', '/api/identity/organisations/{id}/members', 'identity', 'manager', 'Organisation members'],
  ['put', '/api/identity/organisations/{id}/members/{userId}', 'identity', 'manager', 'Add or change a member {role}; naming, demoting or removing a manager is superuser only'],
  ['delete', '/api/identity/organisations/{id}/members/{userId}', 'identity', 'manager', 'Remove a member (a manager: superuser only)'],
  ['get', '/api/identity/external-groups', 'identity', 'manager', 'Synced directory groups (team picker)'],
  ['get', '/api/identity/organisations/{id}/teams', 'identity', 'manager', 'Teams of an organisation'],
  ['post', '/api/identity/organisations/{id}/teams', 'identity', 'manager', 'Create a team {name, external_group_id?}'],
  ['patch', '/api/identity/teams/{id}', 'identity', 'manager', "Update a team (linking it to a group gives it that group's active members)"],
  ['delete', '/api/identity/teams/{id}', 'identity', 'manager', 'Delete a team'],
  ['put', '/api/identity/teams/{id}/members/{userId}', 'identity', 'manager', 'Add a team member (409 for linked teams)'],
  ['delete', '/api/identity/teams/{id}/members/{userId}', 'identity', 'manager', 'Remove a team member (409 for linked teams)'],
  ['get', '/api/identity/organisations/{id}/agent-policies', 'identity', 'manager', 'Agent policies of an organisation'],
  ['post', '/api/identity/organisations/{id}/agent-policies', 'identity', 'manager', 'Create an agent policy'],
  ['patch', '/api/identity/agent-policies/{id}', 'identity', 'manager', 'Update an agent policy'],
  ['delete', '/api/identity/agent-policies/{id}', 'identity', 'manager', 'Delete an agent policy'],
  ['get', '/api/identity/agent-policy', 'identity', 'user', 'Effective agent policy (self; superuser: ?user_id=)'],
  ['get', '/api/identity/agent-catalog', 'identity', 'user', 'Tools and models an agent policy may name'],

  ['get', '/api/data-authorization/roles', 'data-access', 'superuser', 'Roles'],
  ['post', '/api/data-authorization/roles', 'data-access', 'superuser', 'Create a role'],
  ['patch', '/api/data-authorization/roles/{role_id}', 'data-access', 'superuser', 'Update a role'],
  ['delete', '/api/data-authorization/roles/{role_id}', 'data-access', 'superuser', 'Delete a role'],
  ['get', '/api/data-authorization/roles/{role_id}/policies', 'data-access', 'superuser', 'Table grants of a role'],
  ['put', '/api/data-authorization/roles/{role_id}/policies/{table_name}', 'data-access', 'superuser', 'Create or replace a table grant'],
  ['delete', '/api/data-authorization/roles/{role_id}/policies/{table_name}', 'data-access', 'superuser', 'Delete a table grant'],
  ['get', '/api/data-authorization/assignments', 'data-access', 'superuser', 'Role assignments'],
  ['post', '/api/data-authorization/assignments', 'data-access', 'superuser', 'Assign a role {user_id, role_id}'],
  ['delete', '/api/data-authorization/assignments/{assignment_id}', 'data-access', 'superuser', 'Remove an assignment'],
  ['get', '/api/data-authorization/users/{user_id}/effective-policy', 'data-access', 'superuser', 'Effective data policy of a user'],
  ['get', '/api/data-authorization/audit', 'data-access', 'superuser', 'The action log, newest first'],
  ['get', '/api/internal/bi-policy/{user_id}', 'internal', 'internal', 'Effective and compiled data policy for the BI tool'],
  ['post', '/api/internal/bi-audit', 'internal', 'internal', 'Record a BI allow/deny decision (known fields only)'],

  ['get', '/api/memories', 'memories', 'user', 'Own memory entries'],
  ['post', '/api/memories', 'memories', 'user', 'Add a memory entry'],
  ['delete', '/api/memories/{id}', 'memories', 'user', 'Delete an own memory entry'],
  ['get', '/api/agent/memories', 'memories', 'agent', "The token's user's memories (bi withheld)"],
  ['get', '/api/agent/memories/{id}', 'memories', 'agent', "One memory entry of the token's user"],

  ['get', '/api/account', 'account', 'user', 'Connected workspace account status (no tokens)'],
  ['post', '/api/account/connect', 'account', 'user', 'Start connecting: → {authorization_url}'],
  ['get', '/api/account/callback', 'account', 'idp-redirect', 'OAuth callback: store tokens, 302 return_to'],
  ['delete', '/api/account', 'account', 'user', 'Disconnect: forget the tokens, revoke at the provider, end warm sandboxes → {connected:false, revoked_at_provider}'],

  ['post', '/api/chat/messages', 'chat', 'user', 'Send a prompt; answer an NDJSON event stream ending in one done'],
  ['get', '/api/chat/model', 'chat', 'user', "The model that answers (?session_id=: that chat's, else the default): {id, label, provider, model, demo, context_tokens}"],
  ['get', '/api/chat/models', 'chat', 'user', "The models on offer that the user's agent policy allows (the picker), the default first"],
  ['get', '/api/chat/sessions', 'chat', 'user', 'Own chat sessions'],
  ['get', '/api/chat/sessions/{id}/messages', 'chat', 'user', "The branch shown of an own chat session, with each turn's siblings and usage"],
  ['put', '/api/chat/sessions/{id}/pin', 'chat', 'user', 'Pin an own chat to the top of the list, or unpin it ({pinned}) → 204'],
  ['post', '/api/chat/sessions/{id}/branch', 'chat', 'user', 'Show the branch through a turn (an edit or regenerate sibling) → the branch shown'],
  ['get', '/api/chat/sessions/{id}/export', 'chat', 'user', 'Export the branch shown: ?format=markdown (a file) or json (turns, transcript, charts)'],
  ['patch', '/api/chat/sessions/{id}', 'chat', 'user', 'Rename an own chat session and/or switch its model ({title?, model_id?})'],
  ['delete', '/api/chat/sessions/{id}', 'chat', 'user', 'Delete an own chat session (stops its turn, ends its sandbox)'],
  ['get', '/api/chat/sessions/{id}/share', 'chat', 'user', 'Whether an own chat has a live read-only link → {shared, created_at}'],
  ['post', '/api/chat/sessions/{id}/share', 'chat', 'user', 'Make a read-only link to an own chat (revokes the old one) → 201 {shared, created_at, token, url}; the token is shown once'],
  ['delete', '/api/chat/sessions/{id}/share', 'chat', 'user', "Revoke an own chat's link → 204"],
  ['get', '/api/share/{token}', 'chat', 'user', 'A shared chat, read-only (same organisation as its owner; else 404 ERR_SHARE_NOT_FOUND)'],
  ['get', '/api/share/{token}/attachments/{name}', 'chat', 'user', "A chart the shared turns show, from the owner's workspace"],
  ['get', '/api/share/{token}/files/{name}', 'chat', 'user', 'A file a shared prompt names (images inline, tables as a download)'],
  ['get', '/api/share/{token}/files/{name}/preview', 'chat', 'user', 'The first rows of a table a shared prompt names'],
  ['get', '/api/chat/sessions/{id}/feedback', 'chat', 'user', "The caller's feedback on the turns of an own chat → {feedback: [{turn_id, rating, note, updated_at}]}"],
  ['put', '/api/chat/sessions/{id}/turns/{turnId}/feedback', 'chat', 'user', 'Rate a finished answer {rating: up|down, note? (≤ 2,000 characters)} → the feedback; 409 ERR_FEEDBACK_TURN_RUNNING'],
  ['delete', '/api/chat/sessions/{id}/turns/{turnId}/feedback', 'chat', 'user', "Take back the caller's feedback on a turn → 204"],
  ['post', '/api/fleet/operator', 'fleet', 'node', 'An operator command (inspect, logs, restart, kill; the control-socket request union) for a session this node owns'],
  ['post', '/api/fleet/chat/messages', 'fleet', 'node', 'A chat turn another node forwards to the owner of the session (same body and NDJSON answer as POST /api/chat/messages)'],
  ['get', '/api/fleet/chat/sessions/{id}/turns/{turnId}/events', 'fleet', 'node', 'Forwarded: follow a turn running on this node'],
  ['get', '/api/fleet/chat/attachments/{name}', 'fleet', 'node', "Forwarded: a chart from the user's workspace on this node"],
  ['post', '/api/fleet/chat/sessions/{id}/turns/{turnId}/cancel', 'fleet', 'node', 'Forwarded: cancel a turn running on this node'],
  ['post', '/api/fleet/chat/sessions/{id}/approvals/{approvalId}', 'fleet', 'node', 'Forwarded: decide a mail send held in a session this node owns'],
  ['get', '/api/fleet/chat/sessions/{id}/approvals/{approvalId}/preview', 'fleet', 'node', 'Forwarded: the message of a send held in a session this node owns'],
  ['get', '/api/fleet/chat/sessions/{id}/approvals/{approvalId}/attachments/{n}', 'fleet', 'node', 'Forwarded: an image attachment of a send held in a session this node owns'],
  ['get', '/api/chat/sessions/{id}/turns/{turnId}/events', 'chat', 'user', 'Replay and follow a turn as NDJSON from the event after ?after=SEQ'],
  ['post', '/api/chat/sessions/{id}/turns/{turnId}/cancel', 'chat', 'user', 'Stop a running turn'],
  ['post', '/api/chat/sessions/{id}/approvals/{approvalId}', 'chat', 'user', 'Approve or deny a mail send held at the proxy ({decision, scope?})'],
  ['get', '/api/chat/sessions/{id}/approvals/{approvalId}/preview', 'chat', 'user', 'The message of a send held for approval while it waits: from, to, cc, bcc, subject, body text, attachments (410 once decided)'],
  ['get', '/api/chat/sessions/{id}/approvals/{approvalId}/attachments/{n}', 'chat', 'user', 'An image attachment of a send held for approval, for its thumbnail (410 once decided)'],
  ['get', '/api/chat/attachments/{name}', 'chat', 'user', 'A rasterized chart (<uuid>.png) from the own workspace'],
  ['post', '/api/chat/sessions/{id}/files', 'chat', 'user', 'Upload a CSV, XLSX, PNG or JPEG into the workspace (raw body, X-File-Name; 201 {file, preview})'],
  ['get', '/api/chat/sessions/{id}/files', 'chat', 'user', "The user's uploaded files ({files})"],
  ['get', '/api/chat/sessions/{id}/files/{name}/preview', 'chat', 'user', "An uploaded file's preview: the first rows of a table (?sheet=)"],
  ['get', '/api/chat/sessions/{id}/files/{name}', 'chat', 'user', "An uploaded file's bytes (images inline, tables as a download)"],
  ['post', '/api/chat/files', 'chat', 'user', 'Upload a file before a chat exists (as POST /api/chat/sessions/{id}/files)'],
  ['get', '/api/chat/files', 'chat', 'user', "The user's uploaded files (as GET /api/chat/sessions/{id}/files)"],
  ['get', '/api/chat/files/{name}/preview', 'chat', 'user', "An uploaded file's preview (?sheet=)"],
  ['get', '/api/chat/files/{name}', 'chat', 'user', "An uploaded file's bytes"],

  ['get', '/api/admin/sessions', 'admin', 'superuser', 'Live sandboxes (503 without a Docker engine)'],
  ['post', '/api/admin/sessions/{id}/restart', 'admin', 'superuser', 'Restart a session with a fresh sandbox (204)'],
  ['post', '/api/admin/sessions/{id}/kill', 'admin', 'superuser', "End a session's sandbox (204)"],
  ['get', '/api/admin/turns/{turnId}', 'admin', 'superuser', "A turn's audit: its tool calls with their upstream requests, and its held mail sends"],
  ['get', '/api/admin/users', 'admin', 'superuser', 'Accounts for user pickers: ?q= (part of username, e-mail or name), limit, offset'],
  ['patch', '/api/admin/users/{id}', 'admin', 'superuser', 'Deactivate, reactivate, promote or demote ({is_active?, is_superuser?}); never yourself (409 ERR_USER_SELF) nor the last active superuser (409 ERR_USER_LAST_SUPERUSER)'],
  ['post', '/api/admin/users/{id}/password', 'admin', 'superuser', "Reset a password ({password} sets it; {} generates one, returned once); the user's web sessions end"],
  ['get', '/api/admin/chat-models', 'admin', 'superuser', 'The models on offer for chats (never a key: has_key), with how many chats use each'],
  ['post', '/api/admin/chat-models', 'admin', 'superuser', 'Add a model ({id, label, provider, model, base_url?, api_key?, context_tokens, enabled?})'],
  ['patch', '/api/admin/chat-models/{id}', 'admin', 'superuser', 'Change a model (any field but id; api_key absent keeps the key, null removes it; enabled: false disables)'],
  ['delete', '/api/admin/chat-models/{id}', 'admin', 'superuser', 'Delete a model (not the default); its chats fall back to the default'],
  ['get', '/api/admin/usage', 'admin', 'superuser', 'Usage of chat turns per UTC day or month and per user, team or model, with cost (?from, to, group, period; docs/usage.md)'],
  ['get', '/api/admin/usage.csv', 'admin', 'superuser', 'The usage report as CSV (same parameters)'],
  ['get', '/api/admin/budgets', 'admin', 'superuser', 'Every budget with what is used of it in the running period'],
  ['post', '/api/admin/budgets', 'admin', 'superuser', 'Add a budget ({scope: user|team, subject_id, metric: tokens|cost, period: day|month, amount})'],
  ['patch', '/api/admin/budgets/{id}', 'admin', 'superuser', 'Change a budget amount ({amount}); counts from the next turn'],
  ['delete', '/api/admin/budgets/{id}', 'admin', 'superuser', 'Remove a budget'],
  ['get', '/api/admin/mail-policy', 'admin', 'superuser', 'The server-wide send policy (first from AIRLOCK_MAIL_*)'],
  ['put', '/api/admin/mail-policy', 'admin', 'superuser', 'Change the server-wide send policy ({allow_domains?, block_domains?, other?, max_recipients?, max_per_hour?, approval_timeout_s?})'],
];

const SECURITY: Record<Who, Record<string, string[]>[]> = {
  anyone: [],
  'idp-redirect': [],
  user: [{ session: [] }],
  manager: [{ session: [] }],
  superuser: [{ session: [] }],
  agent: [{ agentToken: [] }],
  internal: [{ internalSecret: [] }],
  node: [{ nodeSignature: [] }],
};

/** Build the document (server URL = the public origin). */
export function openApiDocument(publicOrigin: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [method, path, tag, who, summary] of OPERATIONS) {
    const params = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    const unsafe = method !== 'get' && path.startsWith('/api/') && !path.startsWith('/api/internal/') && !path.startsWith('/api/fleet/');
    paths[path] ??= {};
    paths[path][method] = {
      tags: [tag],
      summary,
      description: `Who: ${who}.${unsafe ? ' Needs X-CSRF-Token.' : ''} Details: docs/api.md.`,
      ...(params.length ? { parameters: params } : {}),
      security: SECURITY[who],
      responses: {
        default: { description: 'Error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
        '2XX': { description: 'Success' },
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Airlock', version: '1', description: 'The Airlock daemon web API. Prose reference: docs/api.md.' },
    servers: [{ url: publicOrigin }],
    paths,
    components: {
      securitySchemes: {
        session: { type: 'apiKey', in: 'cookie', name: 'airlock.sid', description: 'Browser session; unsafe /api methods also need X-CSRF-Token (GET /api/auth/csrf).' },
        agentToken: { type: 'http', scheme: 'bearer', description: 'AGENT_USER_TOKEN (sandbox host route only).' },
        internalSecret: { type: 'http', scheme: 'bearer', description: 'MCP_INTERNAL_SECRET.' },
        nodeSignature: { type: 'apiKey', in: 'header', name: 'X-Airlock-Node-Signature', description: 'HMAC-SHA256 with AIRLOCK_NODE_SECRET over method, path, node, time, nonce, user and body hash (docs/deploy.md).' },
      },
      schemas: {
        Error: {
          type: 'object',
          required: ['error'],
          properties: { error: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'string', pattern: '^ERR_[A-Z0-9_]+$' }, message: { type: 'string' } } } },
        },
      },
    },
  };
}
