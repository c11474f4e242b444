/**
 * The connector service (docs/connectors.md): add, change, delete, list the tools from the server,
 * set each tool's mode, and decide whether a user may use a connector's tool. Every change is
 * checked whole before it is written (URL, auth, tools), so a failure saves nothing.
 */
import {
  AppError,
  type ConnectorAuthKind,
  type ConnectorChange,
  type ConnectorInput,
  type ConnectorTool,
  type ConnectorToolMode,
  type ConnectorTokens,
  type ConnectorView,
  type Encryptor,
  connectorToolName,
  isReservedHeader,
} from '../../core/index.js';
import { nowIso, type Sql } from '../db/index.js';
import { effectiveAgentPolicy, policyAllows } from '../identity/agent-policy.js';
import { checkTools, listAllTools, type Discovered } from './discover.js';
import {
  clientSecretAad,
  connectorRow,
  connectorView,
  inAudience,
  resolveRow,
  secretAad,
  type ResolvedConnector,
} from './store.js';
import { connectUpstream, type CredentialHeaders } from './upstream.js';

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * Check a server URL: https, or plain http on a loopback address only when `allowHttpLoopback`
 * (AIRLOCK_CONNECTORS_ALLOW_HTTP_LOOPBACK, a development setting); no user name or password, no
 * fragment.
 */
export function checkConnectorUrl(raw: string, allowHttpLoopback: boolean): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new AppError('ERR_CONNECTOR_URL', 'url: not a valid URL');
  }
  if (u.username || u.password)
    throw new AppError(
      'ERR_CONNECTOR_URL',
      'url: credentials do not belong in the URL; use the auth settings (stored encrypted)',
    );
  if (u.hash) throw new AppError('ERR_CONNECTOR_URL', 'url: no fragment');
  if (u.protocol === 'https:') return u.href;
  if (u.protocol === 'http:' && allowHttpLoopback && LOOPBACK_HOSTS.has(u.hostname)) return u.href;
  if (u.protocol === 'http:')
    throw new AppError(
      'ERR_CONNECTOR_URL',
      'url: must be https (plain http only on a loopback address with AIRLOCK_CONNECTORS_ALLOW_HTTP_LOOPBACK)',
    );
  throw new AppError('ERR_CONNECTOR_URL', 'url: must be https');
}

/** The auth settings must fit their kind. */
function checkAuth(kind: ConnectorAuthKind, header: string | null, secret: boolean): void {
  if (kind === 'header' && !header)
    throw new AppError('ERR_CONNECTOR_AUTH', "auth_header_name: required for auth_kind 'header'");
  if (kind === 'header' && header && isReservedHeader(header))
    throw new AppError('ERR_CONNECTOR_AUTH', `auth_header_name: ${header} cannot carry a credential`);
  if ((kind === 'header' || kind === 'bearer') && !secret)
    throw new AppError('ERR_CONNECTOR_AUTH', `auth_secret: required for auth_kind '${kind}'`);
}

/** The credential headers for a connector and a user (the OAuth token through `tokens`). */
export function credentialHeaders(
  c: ResolvedConnector,
  userId: number | null,
  tokens?: ConnectorTokens,
): CredentialHeaders {
  return async () => {
    if (c.authKind === 'header' && c.secret && c.authHeaderName) return { [c.authHeaderName]: c.secret };
    if (c.authKind === 'bearer' && c.secret) return { authorization: `Bearer ${c.secret}` };
    if (c.authKind === 'oauth') {
      const t = userId !== null && tokens ? await tokens.accessToken(c.id, userId) : null;
      if (!t) throw new AppError('ERR_CONNECTOR_NOT_CONNECTED', `connect ${c.label} first`);
      return { authorization: `Bearer ${t}` };
    }
    return {};
  };
}

/** List and check the server's tools (nothing written). */
export async function discoverTools(
  c: ResolvedConnector,
  previous: readonly ConnectorTool[],
  cred: CredentialHeaders,
  secrets: string[],
): Promise<Discovered & { transport: ResolvedConnector['transport'] }> {
  const { client, transport } = await connectUpstream(c.transport, c.url, cred, secrets);
  try {
    return { ...checkTools(c.id, await listAllTools(client, secrets), previous), transport };
  } finally {
    await client.close().catch(() => undefined);
  }
}

export interface ConnectorServiceOptions {
  db: Sql;
  enc: Encryptor;
  allowHttpLoopback: boolean;
  /** OAuth connectors' tokens (the per-user OAuth piece); absent: an OAuth connector's tools are listed once an admin connected it. */
  tokens?: ConnectorTokens;
}

/** The result of a create or refresh: the saved connector and the tools left out, with why. */
export interface ConnectorSaved {
  connector: ConnectorView;
  skipped: Discovered['skipped'];
}

const notFound = (id: string) => new AppError('ERR_CONNECTOR_NOT_FOUND', `no connector "${id.slice(0, 40)}"`);

export class ConnectorService {
  constructor(private readonly o: ConnectorServiceOptions) {}

  /**
   * Add a connector and list its tools from the server in one step: a server that does not answer
   * as MCP saves nothing. An OAuth connector is saved with no tools unless `actorId` has connected
   * it (then its tools are listed with the actor's token).
   */
  async create(m: ConnectorInput, actorId: number | null): Promise<ConnectorSaved> {
    const { db, enc } = this.o;
    const url = checkConnectorUrl(m.url, this.o.allowHttpLoopback);
    const kind = m.auth_kind ?? 'none';
    checkAuth(kind, m.auth_header_name ?? null, !!m.auth_secret);
    if (await connectorRow(db, m.id))
      throw new AppError('ERR_CONNECTOR_EXISTS', `a connector with the id "${m.id}" exists already`);
    const row = {
      id: m.id,
      label: m.label,
      url,
      transport: m.transport ?? 'streamable_http',
      audience: JSON.stringify(m.audience ?? { kind: 'everyone' }),
      auth_kind: kind,
      auth_header_name: kind === 'header' ? m.auth_header_name! : null,
      auth_secret_enc:
        (kind === 'header' || kind === 'bearer') && m.auth_secret ? enc.encrypt(m.auth_secret, secretAad(m.id)) : null,
      oauth_client_id: m.oauth_client_id ?? null,
      oauth_client_secret_enc: m.oauth_client_secret ? enc.encrypt(m.oauth_client_secret, clientSecretAad(m.id)) : null,
      enabled: m.enabled === false ? 0 : 1,
      tools: '[]',
      tools_refreshed_at: null as string | null,
      created_at: nowIso(),
      updated_at: nowIso(),
    };
    const resolved = resolveRow(enc, row);
    let skipped: Discovered['skipped'] = [];
    if (kind !== 'oauth' || (await this.#connected(m.id, actorId))) {
      const d = await discoverTools(
        resolved,
        [],
        credentialHeaders(resolved, actorId, this.o.tokens),
        secretsOf(resolved),
      );
      Object.assign(row, { tools: JSON.stringify(d.tools), transport: d.transport, tools_refreshed_at: nowIso() });
      skipped = d.skipped;
    }
    await db.insertInto('connectors').values(row).execute();
    return { connector: connectorView((await connectorRow(db, m.id))!), skipped };
  }

  /** Change a connector (a secret absent keeps it, null removes it); the result is checked whole first. */
  async update(id: string, c: ConnectorChange): Promise<ConnectorView> {
    const { db, enc } = this.o;
    const row = await connectorRow(db, id);
    if (!row) throw notFound(id);
    const set: Record<string, unknown> = { updated_at: nowIso() };
    if (c.url !== undefined) set.url = checkConnectorUrl(c.url, this.o.allowHttpLoopback);
    for (const k of ['label', 'transport', 'auth_kind', 'auth_header_name', 'oauth_client_id'] as const)
      if (c[k] !== undefined) set[k] = c[k];
    if (c.audience !== undefined) set.audience = JSON.stringify(c.audience);
    if (c.enabled !== undefined) set.enabled = c.enabled ? 1 : 0;
    if (c.auth_secret !== undefined)
      set.auth_secret_enc = c.auth_secret ? enc.encrypt(c.auth_secret, secretAad(id)) : null;
    if (c.oauth_client_secret !== undefined)
      set.oauth_client_secret_enc = c.oauth_client_secret
        ? enc.encrypt(c.oauth_client_secret, clientSecretAad(id))
        : null;
    const next = { ...row, ...set } as typeof row;
    if (next.auth_kind !== 'header') next.auth_header_name = set.auth_header_name = null;
    if (next.auth_kind === 'none' || next.auth_kind === 'oauth') next.auth_secret_enc = set.auth_secret_enc = null;
    checkAuth(next.auth_kind, next.auth_header_name, !!next.auth_secret_enc);
    await db.updateTable('connectors').set(set).where('id', '=', id).execute();
    return connectorView((await connectorRow(db, id))!);
  }

  async delete(id: string): Promise<void> {
    const r = await this.o.db.deleteFrom('connectors').where('id', '=', id).executeTakeFirst();
    if (!Number(r.numDeletedRows)) throw notFound(id);
  }

  /** Whether the acting admin has connected this OAuth connector (its tools are listed with their token). */
  async #connected(id: string, actorId: number | null): Promise<boolean> {
    return actorId !== null && !!(await this.o.tokens?.accessToken(id, actorId).catch(() => null));
  }

  /** List the tools from the server again, keeping the modes of tools that remain. Nothing is written on a failure. */
  async refreshTools(id: string, actorId: number | null): Promise<ConnectorSaved> {
    const { db, enc } = this.o;
    const row = await connectorRow(db, id);
    if (!row) throw notFound(id);
    const c = resolveRow(enc, row);
    // Not the server's failure: say what to do, not "did not answer as an MCP server".
    if (c.authKind === 'oauth' && !(await this.#connected(id, actorId)))
      throw new AppError(
        'ERR_CONNECTOR_NOT_CONNECTED',
        actorId === null
          ? `${c.label} lists its tools only to a user's token: refresh it on the admin page, connected in Settings`
          : `connect ${c.label} with your own account first (Settings): its tools are listed with your token`,
      );
    const d = await discoverTools(c, c.tools, credentialHeaders(c, actorId, this.o.tokens), secretsOf(c));
    await db
      .updateTable('connectors')
      .set({
        tools: JSON.stringify(d.tools),
        transport: d.transport,
        tools_refreshed_at: nowIso(),
        updated_at: nowIso(),
      })
      .where('id', '=', id)
      .execute();
    return { connector: connectorView((await connectorRow(db, id))!), skipped: d.skipped };
  }

  /** Set tools' modes; an unknown tool name refuses the whole change. */
  async setToolModes(id: string, modes: Record<string, ConnectorToolMode>): Promise<ConnectorView> {
    const { db } = this.o;
    const row = await connectorRow(db, id);
    if (!row) throw notFound(id);
    const view = connectorView(row);
    const names = new Set(view.tools.map((t) => t.name));
    const unknown = Object.keys(modes).filter((n) => !names.has(n));
    if (unknown.length)
      throw new AppError('ERR_CONNECTOR_TOOL_NOT_FOUND', `${id} has no tool ${unknown.slice(0, 3).join(', ')}`);
    const tools = view.tools.map((t) => (modes[t.name] ? { ...t, mode: modes[t.name] } : t));
    await db
      .updateTable('connectors')
      .set({ tools: JSON.stringify(tools), updated_at: nowIso() })
      .where('id', '=', id)
      .execute();
    return connectorView((await connectorRow(db, id))!);
  }
}

/** The secrets of a connector, to scrub from anything the server says back. */
export function secretsOf(c: ResolvedConnector): string[] {
  return [c.secret, c.oauthClientSecret].filter((s): s is string => !!s);
}

/**
 * The connector tools a user may use now, as the agent sees them (`<id>__<tool>`): the connector
 * enabled, the user in its audience, the tool not disabled, and the agent policy allowing it.
 */
export async function usableTools(db: Sql, c: ResolvedConnector, userId: number): Promise<ConnectorTool[]> {
  if (!c.enabled || !(await inAudience(db, c.audience, userId))) return [];
  const policy = await effectiveAgentPolicy(db, userId);
  return c.tools.filter((t) => t.mode !== 'disabled' && policyAllows(policy, 'tool', connectorToolName(c.id, t.name)));
}

/** The names an agent policy may give connector tools: every `<id>__<tool>` and `<id>__*`. */
export async function connectorPolicyNames(db: Sql): Promise<string[]> {
  const rows = await db.selectFrom('connectors').select(['id', 'tools']).orderBy('id').execute();
  return rows.flatMap((r) => [
    `${r.id}__*`,
    ...(JSON.parse(r.tools) as ConnectorTool[]).map((t) => connectorToolName(r.id, t.name)),
  ]);
}

/** The connectors a user's session gets a route for: enabled, in the audience, with at least one usable tool. */
export async function sessionConnectors(db: Sql, enc: Encryptor, userId: number): Promise<ResolvedConnector[]> {
  const rows = await db.selectFrom('connectors').selectAll().where('enabled', '=', 1).orderBy('id').execute();
  const out: ResolvedConnector[] = [];
  for (const r of rows) {
    const c = resolveRow(enc, r);
    if ((await usableTools(db, c, userId)).length) out.push(c);
  }
  return out;
}
