import { readFileSync } from 'node:fs';
import {
  Agent as HttpAgent,
  request as httpRequest,
  type ClientRequest,
  type IncomingMessage,
  type OutgoingHttpHeaders,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { z } from 'zod';
import type { Config } from './config.js';
import { AppError, appErrorFromPeer } from './errors.js';
import { checkAnswer } from './ndjson.js';
import { signNodeRequest } from './node-auth.js';
import { CodedErrorSchema } from './sandbox-protocol.js';

/**
 * The one client for requests between the nodes of a fleet (docs/deploy.md): the web app's
 * forwarding of chat requests to a session's owner, the CLI's operator commands and its attach
 * upgrade all go through it. It signs every request for its receiver (core/node-auth.ts), speaks
 * https trusting only AIRLOCK_NODE_CA_FILE when that is set, and refuses a plain http node URL
 * unless AIRLOCK_FLEET_ALLOW_HTTP=true.
 */

/** The node a request goes to: its id (signed as the receiver) and its AIRLOCK_NODE_URL. */
export interface NodeTarget {
  id: string;
  url: string;
}

export interface NodeRequestOptions {
  method: string;
  /** Path and query on the receiver, e.g. /api/fleet/operator */
  path: string;
  /** The user the sending node authenticated (null: the node itself, e.g. an operator command). */
  userId: number | null;
  /** The whole body (hashed into the signature); empty when absent. */
  body?: Buffer | string;
  headers?: OutgoingHttpHeaders;
  /** Use the keep-alive agent (forwarded chat requests); false for an upgrade. */
  keepAlive?: boolean;
}

/** What a node answers another on success: `{"result": …}`. */
export const NodeResultSchema = z.object({ result: z.unknown().optional() });
/** What it answers on failure: the HTTP error body (docs/architecture.md#http-error-body). */
export const NodeErrorBodySchema = z.object({ error: CodedErrorSchema });

const JSON_TIMEOUT_MS = 30_000;

export class NodeClient {
  readonly #secret: string;
  readonly #self: string;
  readonly #allowHttp: boolean;
  readonly #ca?: Buffer;
  readonly #agents: { http: HttpAgent; https: HttpsAgent };

  constructor(config: Readonly<Config>) {
    if (!config.node.secret)
      throw new AppError('ERR_CONFIG_INVALID', 'AIRLOCK_NODE_SECRET is not set: this node cannot talk to the others');
    this.#secret = config.node.secret.reveal();
    this.#self = config.node.id;
    this.#allowHttp = config.node.allowHttp;
    if (config.node.caFile) {
      try {
        this.#ca = readFileSync(config.node.caFile);
      } catch (err) {
        throw new AppError(
          'ERR_CONFIG_INVALID',
          `AIRLOCK_NODE_CA_FILE: cannot read ${config.node.caFile} (${err instanceof Error ? err.message : String(err)})`,
        );
      }
    }
    this.#agents = {
      http: new HttpAgent({ keepAlive: true, maxSockets: 256 }),
      https: new HttpsAgent({ keepAlive: true, maxSockets: 256, ...(this.#ca ? { ca: this.#ca } : {}) }),
    };
  }

  /** The URL a request goes to; throws ERR_NODE_PLAIN_HTTP for http:// unless allowed. */
  url(to: NodeTarget, path: string): URL {
    const url = new URL(path, to.url);
    if (url.protocol === 'https:') return url;
    if (url.protocol === 'http:' && this.#allowHttp) return url;
    throw new AppError(
      'ERR_NODE_PLAIN_HTTP',
      `node ${to.id} is at ${url.protocol}//${url.host}: requests between nodes go over https (AIRLOCK_FLEET_ALLOW_HTTP=true allows plain http)`,
    );
  }

  /**
   * One signed request to `to`, sent whole (the body, when given, and the end). The
   * caller handles `response` (and `upgrade`) and `error`.
   */
  open(to: NodeTarget, o: NodeRequestOptions): ClientRequest {
    const url = this.url(to, o.path);
    const body = o.body ?? '';
    const signed = signNodeRequest(this.#secret, {
      method: o.method,
      path: url.pathname + url.search,
      node: this.#self,
      to: to.id,
      userId: o.userId,
      body,
    });
    const headers: OutgoingHttpHeaders = { ...o.headers, ...signed };
    if (body.length) headers['content-length'] = String(Buffer.byteLength(body));
    const https = url.protocol === 'https:';
    const keepAlive = o.keepAlive !== false;
    const agent = keepAlive ? (https ? this.#agents.https : this.#agents.http) : false;
    const req = https
      ? httpsRequest(url, { method: o.method, headers, agent, ...(this.#ca ? { ca: this.#ca } : {}) })
      : httpRequest(url, { method: o.method, headers, agent });
    req.end(body);
    return req;
  }

  /**
   * A JSON request whose answer is checked: a coded error body becomes that error (status from
   * the catalogue), any other failure ERR_NODE_UNREACHABLE, a success that is not `{"result"}`
   * ERR_NODE_BAD_ANSWER.
   */
  async json(to: NodeTarget, method: string, path: string, body?: unknown): Promise<unknown> {
    const raw = body === undefined ? '' : JSON.stringify(body);
    const unreachable = (why: string) => new AppError('ERR_NODE_UNREACHABLE', `node at ${to.url} ${why}`);
    const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = this.open(to, {
        method,
        path,
        userId: null,
        body: raw,
        headers: raw ? { 'content-type': 'application/json' } : {},
      });
      req.setTimeout(JSON_TIMEOUT_MS, () => req.destroy(new Error(`no answer in ${JSON_TIMEOUT_MS / 1000} s`)));
      req.on('error', (err) => reject(unreachable(`does not answer (${err.message})`)));
      req.on('response', (res: IncomingMessage) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString() }));
        res.on('error', (err) => reject(unreachable(`broke off its answer (${err.message})`)));
      });
    });
    let answer: unknown;
    try {
      answer = JSON.parse(text);
    } catch {
      answer = undefined; // not JSON: judged below by its status
    }
    if (status < 200 || status >= 300) {
      const e = NodeErrorBodySchema.safeParse(answer);
      if (e.success) throw appErrorFromPeer(e.data.error);
      throw unreachable(`answered ${status}`);
    }
    return checkAnswer(NodeResultSchema, answer, 'ERR_NODE_BAD_ANSWER', `the answer of the node at ${to.url}`).result;
  }

  /** Close idle keep-alive sockets (a CLI process exits sooner). */
  close(): void {
    this.#agents.http.destroy();
    this.#agents.https.destroy();
  }
}
