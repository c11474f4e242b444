/**
 * The host's MCP client to a connector's server (the official SDK's client), used by tool
 * discovery and by the egress gateway: Streamable HTTP or the older HTTP+SSE transport, the
 * credential added on the host, redirects never followed, requests only to the registered URL's
 * origin, every answer bounded in bytes.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation';
import { AppError, type ConnectorTransport } from '../../core/index.js';

/** Bytes one upstream answer (one HTTP response, or one SSE stream) may carry. */
export const MAX_UPSTREAM_RESPONSE_BYTES = 4 * 1024 * 1024;
/** How long connecting (initialize) may take. */
export const UPSTREAM_CONNECT_TIMEOUT_MS = 15_000;

/** The credential to send, as headers; produced per request (an OAuth token may change). */
export type CredentialHeaders = () => Promise<Record<string, string>>;

/** Tool output is passed on, not checked against the server's output schema: the host is a conduit. */
class NoOutputValidation implements jsonSchemaValidator {
  getValidator<T>(_schema: JsonSchemaType): JsonSchemaValidator<T> {
    return (input) => ({ valid: true, data: input as T, errorMessage: undefined });
  }
}

/** A Response whose body errors past `max` bytes. */
function bounded(res: Response, max: number): Response {
  if (!res.body) return res;
  let n = 0;
  const cut = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, ctl) {
      n += chunk.byteLength;
      if (n > max) return ctl.error(new Error(`answer over ${max} bytes`));
      ctl.enqueue(chunk);
    },
  });
  return new Response(res.body.pipeThrough(cut), {
    status: res.status,
    statusText: res.statusText,
    headers: res.headers,
  });
}

/**
 * The fetch the transports use: only the registered origin, no redirect followed, the credential
 * set here (never carried in the URL), every answer bounded.
 */
export function connectorFetch(
  base: URL,
  credential: CredentialHeaders,
  maxBytes = MAX_UPSTREAM_RESPONSE_BYTES,
): typeof fetch {
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.origin !== base.origin) throw new Error('the server pointed the client at another origin');
    const headers = new Headers(init?.headers);
    for (const [k, v] of Object.entries(await credential())) headers.set(k, v);
    const res = await fetch(url, { ...init, headers, redirect: 'manual' });
    if (res.status >= 300 && res.status < 400) {
      await res.body?.cancel();
      throw new Error(
        `the server answered a redirect (${res.status}); connectors are called at their registered URL only`,
      );
    }
    return bounded(res, maxBytes);
  };
}

function transportFor(kind: ConnectorTransport, url: URL, f: typeof fetch): Transport {
  return kind === 'sse'
    ? new SSEClientTransport(url, { fetch: f, eventSourceInit: { fetch: f } })
    : new StreamableHTTPClientTransport(url, {
        fetch: f,
        reconnectionOptions: {
          maxRetries: 0,
          initialReconnectionDelay: 1000,
          maxReconnectionDelay: 1000,
          reconnectionDelayGrowFactor: 1,
        },
      });
}

/** Connect an SDK client over one transport (initialize done), or throw. */
export async function connectOver(
  kind: ConnectorTransport,
  url: string,
  credential: CredentialHeaders,
  timeoutMs = UPSTREAM_CONNECT_TIMEOUT_MS,
): Promise<Client> {
  const u = new URL(url);
  const client = new Client({ name: 'airlock', version: '0.1.0' }, { jsonSchemaValidator: new NoOutputValidation() });
  // A failed GET stream (a server without one) is not the connection's failure.
  client.onerror = () => undefined;
  try {
    await client.connect(transportFor(kind, u, connectorFetch(u, credential)), { timeout: timeoutMs });
    return client;
  } catch (err) {
    await client.close().catch(() => undefined);
    throw err;
  }
}

/**
 * Connect with the transport asked for; a Streamable HTTP attempt that fails falls back to
 * HTTP+SSE (servers that still speak only the older transport). Returns the transport that worked.
 */
export async function connectUpstream(
  kind: ConnectorTransport,
  url: string,
  credential: CredentialHeaders,
  secrets: readonly string[] = [],
): Promise<{ client: Client; transport: ConnectorTransport }> {
  try {
    return { client: await connectOver(kind, url, credential), transport: kind };
  } catch (first) {
    if (kind === 'sse') throw discoveryError(first, secrets);
    try {
      return { client: await connectOver('sse', url, credential), transport: 'sse' };
    } catch {
      throw discoveryError(first, secrets);
    }
  }
}

/** An error's message, one line, cut, with every secret scrubbed (the SDK quotes the server's answer, which may echo one). */
export function cleanMessage(err: unknown, secrets: readonly string[]): string {
  let msg = (err instanceof Error ? err.message : String(err)).replace(/\s+/g, ' ').slice(0, 2000);
  for (const s of secrets) if (s) msg = msg.split(s).join('[redacted]');
  return msg.slice(0, 200);
}

/** A failure to talk MCP with the server, as the admin sees it. */
export function discoveryError(err: unknown, secrets: readonly string[]): AppError {
  return new AppError(
    'ERR_CONNECTOR_DISCOVERY',
    `the server did not answer as an MCP server: ${cleanMessage(err, secrets)}`,
  );
}
