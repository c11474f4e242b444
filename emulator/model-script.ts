import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * Scripted model replies shared by the OpenAI- and Anthropic-shaped fake model servers.
 * Each model request takes the next step of the script (or asks `respond`).
 */
export type ModelStep =
  /** A normal streamed reply: text (as chunks) and/or tool calls, each arguments object streamed in pieces. */
  | {
      kind: 'reply';
      text?: string | string[];
      tool_calls?: { name: string; arguments: Record<string, unknown>; id?: string }[];
      delay_ms?: number;
    }
  /**
   * Answer with this HTTP status and the provider's error body, `times` requests in a row (default
   * 1: clients retry 429 and 5xx); `retry_after` (seconds) sets the Retry-After header.
   */
  | { kind: 'error'; status: number; message?: string; times?: number; retry_after?: number }
  /** Start a valid stream, then send a line that is not valid JSON and close. */
  | { kind: 'malformed' }
  /** Start the stream (headers + optionally some text), then send nothing more until the client gives up. */
  | { kind: 'stall'; text?: string }
  /**
   * An error inside a 200 stream before any text, `times` requests in a row: Anthropic's `error`
   * event (`type` default overloaded_error), an OpenAI `data: {"error": …}` chunk.
   */
  | { kind: 'stream_error'; message?: string; type?: string; times?: number }
  /** Accept the request and never answer (no status line, no headers) until the client gives up. */
  | { kind: 'silent'; times?: number }
  /** Reset the connection as soon as the request arrived (no answer), `times` requests in a row. */
  | { kind: 'reset'; times?: number };

export interface RecordedModelRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: any;
  at: number;
}

export interface ModelServerOptions {
  /** The only key accepted (bearer for OpenAI, x-api-key for Anthropic); unset accepts any. */
  apiKey?: string;
  script?: ModelStep[];
  /** Called when the script is empty; defaults to a short text reply. */
  respond?: (body: any, n: number) => ModelStep;
  /**
   * Answers a chat-title request (header `x-airlock-purpose: chat-title`, domain/chat/titles.ts)
   * apart from the script: such requests never take a step and are recorded in `titleRequests`,
   * not `requests`. Unset: 404, so the chat keeps its fallback title.
   */
  title?: (body: any) => ModelStep;
}

export interface ModelServer {
  url: string;
  requests: RecordedModelRequest[];
  /** The chat-title requests (see ModelServerOptions.title). */
  titleRequests: RecordedModelRequest[];
  /** Append steps to the script. */
  push(...steps: ModelStep[]): void;
  /** Drop the steps not played yet; returns how many there were. */
  clearScript(): number;
  close(): Promise<void>;
}

export interface ProviderShape {
  /** Paths (after the server root) that take a completion request. */
  paths: string[];
  /** Base URL suffix handed to clients: '/v1' for OpenAI, '' for Anthropic. */
  baseSuffix: string;
  authorized(req: IncomingMessage, apiKey: string): boolean;
  sendError(res: ServerResponse, status: number, type: string, message: string, headers?: Record<string, string>): void;
  /** The API's rules for a conversation (emulator/model-wire.ts): the first problem, or undefined. */
  wireProblem?(body: any): string | undefined;
  /** Write one scripted step as this provider's response. Resolves when the response is finished. */
  play(step: ModelStep, body: any, req: IncomingMessage, res: ServerResponse): Promise<void>;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export function chunksOf(text: string | string[] | undefined): string[] {
  if (text === undefined) return [];
  if (Array.isArray(text)) return text;
  // Split into word-ish pieces so clients see several deltas.
  return text.match(/\S+\s*|\s+/g) ?? [text];
}

/** Split a JSON text into 2–3 pieces, as providers stream partial tool arguments. */
export function jsonPieces(obj: unknown): string[] {
  const s = JSON.stringify(obj);
  if (s.length < 4) return [s];
  const a = Math.floor(s.length / 3);
  const b = Math.floor((2 * s.length) / 3);
  return [s.slice(0, a), s.slice(a, b), s.slice(b)];
}

/** The provider error type for a status (both providers use these names). */
export function errorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status === 529) return 'overloaded_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}

export function startSse(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  res.flushHeaders();
}

/** Start a scripted fake model server with the given provider shape on 127.0.0.1:0. */
export async function startModelServer(shape: ProviderShape, opts: ModelServerOptions = {}): Promise<ModelServer> {
  const script = [...(opts.script ?? [])];
  const requests: RecordedModelRequest[] = [];
  const titleRequests: RecordedModelRequest[] = [];
  const sockets = new Set<Socket>();
  let n = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void handle(req, res, Buffer.concat(chunks).toString('utf8'));
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });

  async function handle(req: IncomingMessage, res: ServerResponse, raw: string): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'POST' || !shape.paths.includes(path)) {
      shape.sendError(res, 404, 'not_found_error', `no route ${req.method} ${path}`);
      return;
    }
    if (opts.apiKey !== undefined && !shape.authorized(req, opts.apiKey)) {
      shape.sendError(res, 401, 'authentication_error', 'invalid api key');
      return;
    }
    let body: any;
    try {
      body = JSON.parse(raw);
    } catch {
      shape.sendError(res, 400, 'invalid_request_error', 'body is not JSON');
      return;
    }
    if (req.headers['x-airlock-purpose'] === 'chat-title') {
      titleRequests.push({ method: req.method, path, headers: { ...req.headers }, body, at: Date.now() });
      return play(
        opts.title?.(body) ?? { kind: 'error', status: 404, message: 'no chat title scripted' },
        body,
        req,
        res,
      );
    }
    requests.push({ method: req.method, path, headers: { ...req.headers }, body, at: Date.now() });
    // A request the real API would refuse is refused here too, before any script step is used.
    const problem = shape.wireProblem?.(body);
    if (problem) {
      shape.sendError(res, 400, 'invalid_request_error', problem);
      return;
    }
    const step = script.shift() ?? (opts.respond ? opts.respond(body, n) : { kind: 'reply', text: 'ok' });
    n++;
    // A step with `times` plays that many requests in a row (clients retry these failures).
    if ('times' in step && (step.times ?? 1) > 1) script.unshift({ ...step, times: step.times! - 1 } as ModelStep);
    await play(step, body, req, res);
  }

  const play = (step: ModelStep, body: any, req: IncomingMessage, res: ServerResponse) =>
    playStep(shape, step, body, req, res);

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}${shape.baseSuffix}`,
    requests,
    titleRequests,
    push: (...steps) => void script.push(...steps),
    clearScript: () => script.splice(0).length,
    close() {
      closing ??= new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      });
      return closing;
    },
  };
}

/** Play one step: the failures every provider shares here (silent, reset, error status), the rest in the provider's shape. */
async function playStep(
  shape: ProviderShape,
  step: ModelStep,
  body: any,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  try {
    if (step.kind === 'silent') {
      await untilClosed(req, res);
      return;
    }
    if (step.kind === 'reset') {
      req.socket.resetAndDestroy();
      return;
    }
    if (step.kind === 'error') {
      const headers: Record<string, string> =
        step.retry_after !== undefined ? { 'retry-after': String(step.retry_after) } : {};
      shape.sendError(res, step.status, errorType(step.status), step.message ?? 'scripted failure', headers);
      return;
    }
    if (step.kind === 'reply' && step.delay_ms) await sleep(step.delay_ms);
    await shape.play(step, body, req, res);
  } catch {
    // The client went away mid-stream; nothing to do.
    res.destroy();
  }
}

/** Resolve when the client closes the connection (used by `stall`). */
export function untilClosed(req: IncomingMessage, res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    if (res.destroyed) return resolve();
    res.on('close', () => resolve());
    req.socket.on('close', () => resolve());
  });
}

/**
 * A base URL on 127.0.0.1 where nothing listens (a port just bound and closed again): connections
 * are refused, as when the model server is down. `suffix` as the provider's base URL wants it.
 */
export async function closedPortUrl(suffix = ''): Promise<string> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return `http://127.0.0.1:${port}${suffix}`;
}
