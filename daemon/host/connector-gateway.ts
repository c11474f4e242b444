/**
 * The connector half of the egress gateway (docs/connectors.md "What the sandbox sees"): the
 * agent's MCP client speaks Streamable HTTP to its connector route; the gateway, on the host,
 * is the MCP server it talks to. It answers initialize and tools/list itself (tools/list from the
 * registry, as the user may use them now: never the server's own list), and for tools/call checks
 * the user's right to the connector and the tool again, asks the user for a tool marked ask,
 * then calls the registered server with the official SDK client, the credential added here (the
 * static secret, or the user's OAuth token through ConnectorTokens), scrubs any echo of it from
 * the answer, cuts a long result with a marker, and bounds the call (time, bytes, calls in
 * flight per session).
 */
import { createHash } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import {
  isAppError,
  MAX_CONNECTOR_CALLS_IN_FLIGHT,
  MAX_CONNECTOR_RESULT_BYTES,
  type ConnectorTokens,
  type Encryptor,
  type ErrorCode,
  type Logger,
} from '../../core/index.js';
import { SCRUBBED } from '../../core/egress/scrub.js';
import { CALL_ID_META } from '../../core/sandbox-protocol.js';
import {
  cleanMessage,
  connectUpstream,
  credentialHeaders,
  resolveConnector,
  secretsOf,
  usableTools,
  type ResolvedConnector,
} from '../../domain/connectors/index.js';
import type { Sql } from '../../domain/db/index.js';
import type { TurnRequest } from '../../core/sandbox-protocol.js';

/** How long one connector call may take (below the agent's tool timeout, so the model gets the reason). */
export const CONNECTOR_CALL_TIMEOUT_MS = 60_000;

export interface ConnectorCallAudit {
  sessionId: string;
  userId: number;
  turnId: string | null;
  callId: string | null;
  connector: string;
  tool: string;
  status: 'ok' | 'tool_error' | 'refused' | 'upstream_error';
  code?: string;
  bytes: number;
  ms: number;
}

/**
 * An approval for one call of a tool marked ask: the exact arguments shown, in the running turn;
 * allow = approved. A refusal's `code` (default ERR_CONNECTOR_APPROVAL_DENIED) is what the model gets.
 */
export type ConnectorApprover = (a: {
  sessionId: string;
  userId: number;
  turnId: string | null;
  callId: string | null;
  connector: { id: string; label: string };
  tool: string;
  arguments: Record<string, unknown>;
  /** The session's running turn (its events reach the chat), when there is one. */
  turn?: TurnRequest;
}) => Promise<{ allow: boolean; message?: string; code?: ErrorCode }>;

export interface ConnectorGatewayOptions {
  db: Sql;
  enc: Encryptor;
  log: Logger;
  tokens?: ConnectorTokens;
  approve?: ConnectorApprover;
  /** Each call, for the turn audit and the trace. */
  onCall?: (a: ConnectorCallAudit) => void;
  callTimeoutMs?: number;
  /** A session's gateway closed (its held approvals end with it). */
  onSessionClosed?: (sessionId: string) => void;
}

export interface ConnectorRequest {
  sessionId: string;
  userId: number;
  connectorId: string;
  method: string;
  body: Buffer;
  turnId: string | null;
  callId: string | null;
  /** The session's running turn (for an approval). */
  turn?: TurnRequest;
}

export interface ConnectorAnswer {
  status: number;
  body?: string;
}

type Rpc = { jsonrpc?: unknown; id?: string | number | null; method?: unknown; params?: Record<string, unknown> };

const rpcResult = (id: Rpc['id'], result: unknown): ConnectorAnswer => ({
  status: 200,
  body: JSON.stringify({ jsonrpc: '2.0', id, result }),
});
const rpcError = (id: Rpc['id'], code: number, message: string, status = 200): ConnectorAnswer => ({
  status,
  body: JSON.stringify({ jsonrpc: '2.0', id: id ?? null, error: { code, message } }),
});

/** A tool result telling the model what went wrong (and, for "connect first", which connector). */
function toolError(code: ErrorCode, text: string, c?: { id: string; label: string }): Record<string, unknown> {
  return {
    content: [{ type: 'text', text }],
    isError: true,
    _meta: { error_code: code, ...(c ? { connector: { id: c.id, label: c.label } } : {}) },
  };
}

/** Replace every secret in a string (JSON text of an answer). */
function scrubAll(s: string, secrets: readonly string[]): { text: string; hits: number } {
  let hits = 0;
  for (const sec of secrets) {
    if (!sec || !s.includes(sec)) continue;
    const parts = s.split(sec);
    hits += parts.length - 1;
    s = parts.join(SCRUBBED);
  }
  return { text: s, hits };
}

/** Cut text content past the limit, with a marker the model reads. */
function cutResult(result: Record<string, unknown>): Record<string, unknown> {
  const content = Array.isArray(result.content) ? (result.content as { type?: string; text?: string }[]) : [];
  let left = MAX_CONNECTOR_RESULT_BYTES;
  const out = content.map((c) => {
    if (c.type !== 'text' || typeof c.text !== 'string') return c;
    const n = Buffer.byteLength(c.text);
    if (n <= left) {
      left -= n;
      return c;
    }
    const kept = Buffer.from(c.text)
      .subarray(0, Math.max(0, left))
      .toString('utf8')
      .replace(/\uFFFD$/, '');
    left = 0;
    return { ...c, text: `${kept}\n[airlock: result cut at ${MAX_CONNECTOR_RESULT_BYTES} bytes; it was ${n} bytes]` };
  });
  return { ...result, content: out };
}

export class ConnectorGateway {
  readonly #o: ConnectorGatewayOptions;
  /** Upstream clients by session, then by connector and its settings (a changed URL or secret opens a new one). */
  readonly #clients = new Map<string, Map<string, Promise<Client>>>();
  readonly #inFlight = new Map<string, number>();

  constructor(o: ConnectorGatewayOptions) {
    this.#o = o;
  }

  async handle(r: ConnectorRequest): Promise<ConnectorAnswer> {
    // Stateless Streamable HTTP: no GET stream, no session to delete.
    if (r.method !== 'POST') return { status: 405 };
    let msg: Rpc;
    try {
      msg = JSON.parse(r.body.toString('utf8')) as Rpc;
    } catch {
      return rpcError(null, -32700, 'parse error', 400);
    }
    if (
      !msg ||
      typeof msg !== 'object' ||
      Array.isArray(msg) ||
      msg.jsonrpc !== '2.0' ||
      typeof msg.method !== 'string'
    )
      return rpcError(null, -32600, 'invalid request', 400);
    if (msg.id === undefined) return { status: 202 };
    switch (msg.method) {
      case 'initialize': {
        const asked = msg.params?.protocolVersion;
        const version =
          typeof asked === 'string' && SUPPORTED_PROTOCOL_VERSIONS.includes(asked) ? asked : LATEST_PROTOCOL_VERSION;
        return rpcResult(msg.id, {
          protocolVersion: version,
          capabilities: { tools: { listChanged: false } },
          serverInfo: { name: `airlock-connector-${r.connectorId}`, version: '1.0.0' },
        });
      }
      case 'ping':
        return rpcResult(msg.id, {});
      case 'tools/list': {
        const c = await resolveConnector(this.#o.db, this.#o.enc, r.connectorId);
        const tools = c ? await usableTools(this.#o.db, c, r.userId) : [];
        return rpcResult(msg.id, {
          tools: tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.input_schema })),
        });
      }
      case 'tools/call':
        return rpcResult(msg.id, await this.#call(r, msg.params ?? {}));
      default:
        return rpcError(msg.id, -32601, 'method not found');
    }
  }

  async #call(r: ConnectorRequest, params: Record<string, unknown>): Promise<Record<string, unknown>> {
    const started = performance.now();
    const tool = typeof params.name === 'string' ? params.name.slice(0, 64) : '';
    // The model's tool call id, as the agent passes it in `_meta` (docs/audit.md): well-formed ids only.
    const meta =
      params._meta && typeof params._meta === 'object'
        ? (params._meta as Record<string, unknown>)[CALL_ID_META]
        : undefined;
    if (!r.callId && typeof meta === 'string' && /^[A-Za-z0-9_.:-]{1,128}$/.test(meta)) r = { ...r, callId: meta };
    const args =
      params.arguments && typeof params.arguments === 'object' && !Array.isArray(params.arguments)
        ? (params.arguments as Record<string, unknown>)
        : {};
    const audit = (status: ConnectorCallAudit['status'], bytes: number, code?: string) => {
      const a: ConnectorCallAudit = {
        sessionId: r.sessionId,
        userId: r.userId,
        turnId: r.turnId,
        callId: r.callId,
        connector: r.connectorId,
        tool,
        status,
        bytes,
        ms: Math.round((performance.now() - started) * 10) / 10,
        ...(code ? { code } : {}),
      };
      this.#o.log[status === 'ok' ? 'info' : 'warn']({ ...a, area: 'connectors' }, 'connector call');
      this.#o.onCall?.(a);
    };
    const c = await resolveConnector(this.#o.db, this.#o.enc, r.connectorId);
    const usable = c ? await usableTools(this.#o.db, c, r.userId) : [];
    const t = usable.find((x) => x.name === tool);
    if (!c || !t) {
      audit('refused', 0, 'ERR_CONNECTOR_DENIED');
      return toolError(
        'ERR_CONNECTOR_DENIED',
        `The tool ${tool || '(none)'} of ${c?.label ?? r.connectorId} is not available to this user now (disabled by an administrator, or not allowed). Tell the user.`,
      );
    }
    const n = this.#inFlight.get(r.sessionId) ?? 0;
    if (n >= MAX_CONNECTOR_CALLS_IN_FLIGHT) {
      audit('refused', 0, 'ERR_CONNECTOR_BUSY');
      return toolError('ERR_CONNECTOR_BUSY', `Too many ${c.label} calls at once; call one at a time.`);
    }
    this.#inFlight.set(r.sessionId, n + 1);
    try {
      if (t.mode === 'ask') {
        const ok = this.#o.approve
          ? await this.#o.approve({
              sessionId: r.sessionId,
              userId: r.userId,
              turnId: r.turnId,
              callId: r.callId,
              connector: { id: c.id, label: c.label },
              tool,
              arguments: args,
              turn: r.turn,
            })
          : { allow: false, message: 'nobody can be asked to approve it' };
        if (!ok.allow) {
          const code = ok.code ?? 'ERR_CONNECTOR_APPROVAL_DENIED';
          audit('refused', 0, code);
          return toolError(
            code,
            `The user did not approve this call of ${c.label} ${tool}${ok.message ? ` (${ok.message})` : ''}. Do not retry it unless the user asks.`,
          );
        }
      }
      return await this.#forward(r, c, tool, args, audit);
    } finally {
      const left = (this.#inFlight.get(r.sessionId) ?? 1) - 1;
      if (left > 0) this.#inFlight.set(r.sessionId, left);
      else this.#inFlight.delete(r.sessionId);
    }
  }

  async #forward(
    r: ConnectorRequest,
    c: ResolvedConnector,
    tool: string,
    args: Record<string, unknown>,
    audit: (s: ConnectorCallAudit['status'], bytes: number, code?: string) => void,
  ): Promise<Record<string, unknown>> {
    let secrets = secretsOf(c);
    let token: string | null = null;
    if (c.authKind === 'oauth') {
      token = this.#o.tokens ? await this.#o.tokens.accessToken(c.id, r.userId).catch(() => null) : null;
      if (!token) {
        audit('refused', 0, 'ERR_CONNECTOR_NOT_CONNECTED');
        return toolError(
          'ERR_CONNECTOR_NOT_CONNECTED',
          `The user has not connected ${c.label}. Ask the user to connect ${c.label} (the chat shows a "Connect ${c.label}" button), then try again.`,
          c,
        );
      }
      secrets = [...secrets, token];
    }
    try {
      const client = await this.#client(r, c, token);
      const result = (await client.callTool({ name: tool, arguments: args }, undefined, {
        timeout: this.#o.callTimeoutMs ?? CONNECTOR_CALL_TIMEOUT_MS,
      })) as Record<string, unknown>;
      const { text, hits } = scrubAll(JSON.stringify(cutResult(result)), secrets);
      if (hits)
        this.#o.log.warn({ connector: c.id, tool, scrubbed: hits }, 'connector answer echoed its credential; scrubbed');
      const out = JSON.parse(text) as Record<string, unknown>;
      audit(out.isError ? 'tool_error' : 'ok', Buffer.byteLength(text));
      return out;
    } catch (err) {
      this.#drop(r.sessionId, c);
      const timeout = /timed out|timeout/i.test((err as Error)?.message ?? '');
      const code: ErrorCode = isAppError(err, 'ERR_CONNECTOR_DISCOVERY')
        ? 'ERR_CONNECTOR_UPSTREAM'
        : timeout
          ? 'ERR_CONNECTOR_TIMEOUT'
          : 'ERR_CONNECTOR_UPSTREAM';
      audit('upstream_error', 0, code);
      const why = cleanMessage(err, secrets);
      return toolError(code, timeout ? `${c.label} did not answer in time.` : `${c.label} failed: ${why}`);
    }
  }

  #key(c: ResolvedConnector, token: string | null): string {
    return `${c.id}|${createHash('sha256')
      .update(JSON.stringify([c.url, c.transport, c.authKind, c.authHeaderName, c.secret ?? '', token ?? '']))
      .digest('hex')}`;
  }

  #client(r: ConnectorRequest, c: ResolvedConnector, token: string | null): Promise<Client> {
    let m = this.#clients.get(r.sessionId);
    if (!m) this.#clients.set(r.sessionId, (m = new Map()));
    const key = this.#key(c, token);
    let p = m.get(key);
    if (!p) {
      // A connector whose settings (or the user's token) changed: its old client goes.
      this.#drop(r.sessionId, c);
      const cred = token
        ? async () => ({ authorization: `Bearer ${token}` })
        : credentialHeaders(c, r.userId, this.#o.tokens);
      p = connectUpstream(c.transport, c.url, cred, secretsOf(c)).then((x) => x.client);
      p.catch(() => m.delete(key));
      m.set(key, p);
    }
    return p;
  }

  #drop(sessionId: string, c: ResolvedConnector): void {
    const m = this.#clients.get(sessionId);
    if (!m) return;
    for (const [k, p] of m) {
      if (!k.startsWith(`${c.id}|`)) continue;
      m.delete(k);
      void p.then((cl) => cl.close()).catch(() => undefined);
    }
  }

  /** A session ended: close its upstream clients. */
  closeSession(sessionId: string): void {
    const m = this.#clients.get(sessionId);
    this.#clients.delete(sessionId);
    this.#inFlight.delete(sessionId);
    this.#o.onSessionClosed?.(sessionId);
    for (const p of m?.values() ?? []) void p.then((cl) => cl.close()).catch(() => undefined);
  }
}
