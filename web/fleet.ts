import type { IncomingMessage } from 'node:http';
import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { AppError, NODE_HEADERS, NodeClient, NodeRequestVerifier } from '../core/index.js';
import {
  claimNonce,
  listNodes,
  nodesOfUserSandboxes,
  placeSandbox,
  sandboxOf,
  type NodeInfo,
} from '../domain/fleet.js';
import { getUserById } from '../domain/users.js';
import type { WebContext } from './context.js';
import type { OperatorAnswer } from './platform-api.js';

/**
 * Requests for a session whose sandbox another node owns are forwarded to that node (docs/deploy.md):
 * the receiving node authenticates the browser (cookie, CSRF), then sends the request to the
 * owner under /api/fleet/… signed with AIRLOCK_NODE_SECRET and naming the user; the owner's
 * answer (an NDJSON stream included) is piped back unchanged. The cookie and CSRF token never
 * leave the receiving node.
 */

/** Response headers the owner's answer keeps on the way back. */
const PASS_BACK = [
  'content-type',
  'cache-control',
  'content-security-policy',
  'retry-after',
  'x-accel-buffering',
  'x-chat-session-id',
  'x-chat-turn-id',
  'content-length',
];

/**
 * An attachment (a chart the agent drew) lives in the user's workspace on the node that ran the
 * session: when it is not here, the node that last ran a sandbox of this user serves it.
 */
async function attachmentNode(ctx: WebContext, req: Request, name: string): Promise<NodeInfo | undefined> {
  // A name the route would refuse anyway is refused here, before it touches a path.
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$/.test(name)) return undefined;
  const here = await lstat(
    join(ctx.config.dataDir, 'workspaces', String(req.user!.id), '.agent-attachments', name),
  ).then(
    () => true,
    () => false,
  );
  if (here) return undefined;
  const ran = await nodesOfUserSandboxes(ctx.database.sql, req.user!.id, ctx.config.node.id);
  const nodes = await listNodes(ctx.database.sql, ctx.config.node.lostS);
  for (const id of ran) {
    const n = nodes.find((x) => x.id === id && x.alive);
    if (n) return n;
  }
  return undefined;
}

/** Where a chat request goes: undefined = handle it here. */
async function targetNode(ctx: WebContext, req: Request): Promise<NodeInfo | undefined> {
  const self = ctx.config.node.id;
  const attachment = req.method === 'GET' ? /^\/attachments\/([^/]+)(?:\/preview)?$/.exec(req.path) : null;
  if (attachment) return attachmentNode(ctx, req, decodeURIComponent(attachment[1]));
  const m =
    /^\/sessions\/([^/]+)\/(?:turns\/[^/]+\/(?:events|cancel)|approvals\/[^/]+(?:\/preview|\/attachments\/\d+)?)$/.exec(
      req.path,
    );
  const sessionId = m
    ? decodeURIComponent(m[1])
    : req.method === 'POST' && req.path === '/messages'
      ? (req.body as { session_id?: unknown } | undefined)?.session_id
      : undefined;
  const isNewTurn = req.method === 'POST' && req.path === '/messages';
  if (!m && !isNewTurn) return undefined;
  const nodes = await listNodes(ctx.database.sql, ctx.config.node.lostS);
  if (nodes.length <= 1) return undefined;
  if (typeof sessionId === 'string') {
    const owner = await sandboxOf(ctx.database.sql, sessionId);
    if (owner && owner.node_id !== self && owner.state !== 'lost') {
      const node = nodes.find((n) => n.id === owner.node_id);
      // A live owner gets it; a silent one's session is taken over here (its next prompt).
      if (node?.alive) return node;
    }
    if (owner?.node_id === self || !isNewTurn) return undefined;
  }
  // A new sandbox: here when this node has room, else the live node with the most free places.
  const place = placeSandbox(nodes, self);
  return place && place.id !== self ? place : undefined;
}

/** In the chat router, before its routes: forward what belongs to another node. */
export function fleetForwarding(ctx: WebContext): RequestHandler {
  // The one node client of this app (core/node-client.ts): keep-alive sockets per node.
  const client = ctx.config.node.secret ? new NodeClient(ctx.config) : undefined;
  return (req: Request, res: Response, next: NextFunction) => {
    if (req.fleetForwarded || !req.user || !client) return next();
    targetNode(ctx, req)
      .then((node) => (node ? forwardTo(ctx, client, req, res, node, `/api/fleet/chat${req.url}`) : next()))
      .catch(next);
  };
}

/** Send this request to `node` at `path` as the authenticated user; pipe the answer back. */
function forwardTo(
  ctx: WebContext,
  client: NodeClient,
  req: Request,
  res: Response,
  node: NodeInfo,
  path: string,
): void {
  const body = req.rawBody ?? Buffer.alloc(0);
  const headers: Record<string, string> = { 'x-request-id': req.id };
  if (body.length) headers['content-type'] = 'application/json';
  const started = process.hrtime.bigint();
  // Throws ERR_NODE_PLAIN_HTTP (to the caller's catch) for an http node unless allowed.
  const up = client.open(node, { method: req.method, path, userId: req.user?.id ?? null, body, headers });
  up.on('response', (answer: IncomingMessage) => {
    res.status(answer.statusCode ?? 502);
    for (const h of PASS_BACK) {
      const v = answer.headers[h];
      if (v !== undefined) res.setHeader(h, v);
    }
    res.setHeader('X-Airlock-Served-By', node.id);
    if (answer.headers['content-type']?.startsWith('application/x-ndjson')) req.socket.setNoDelay(true);
    answer.pipe(res);
    answer.on('end', () =>
      req.log.debug({ node: node.id, ms: Number(process.hrtime.bigint() - started) / 1e6 }, 'forwarded'),
    );
  });
  up.on('error', (err) => {
    req.log.warn({ node: node.id, url: node.url, err: err.message }, 'owner node unreachable');
    if (res.headersSent) return res.destroy();
    res.setHeader('Retry-After', String(Math.max(1, ctx.config.node.heartbeatS)));
    res.status(503).json({
      error: {
        code: 'ERR_NODE_UNREACHABLE',
        message: `the node running this session (${node.id}) does not answer; try again shortly`,
      },
    });
  });
  // The browser went away: so does the forwarded request (the owner keeps the turn running).
  res.on('close', () => up.destroy());
}

/** The verifier of requests from other nodes: signed for this node, nonces claimed fleet-wide. */
export function nodeVerifier(ctx: WebContext): NodeRequestVerifier | undefined {
  const secret = ctx.config.node.secret;
  return secret
    ? new NodeRequestVerifier(secret.reveal(), ctx.config.node.id, (nonce, node, expiresAt) =>
        claimNonce(ctx.database.sql, nonce, node, expiresAt),
      )
    : undefined;
}

/**
 * /api/fleet/*: only for other nodes. Verifies the signature, the clock window, replays and that
 * the sender is a node of the fleet; then the request runs as the named (active) user.
 */
export function nodeAuth(ctx: WebContext): RequestHandler {
  const verifier = nodeVerifier(ctx);
  return (req: Request, _res: Response, next: NextFunction) => {
    const refuse = (reason: string, node?: string) => {
      // Logged without the body (it may be a prompt).
      req.log.warn(
        { event: 'node_auth_refused', reason, node, method: req.method, path: req.originalUrl.split('?')[0] },
        'inter-node request refused',
      );
      next(new AppError('ERR_NODE_AUTH', 'not a valid request from a node of this fleet'));
    };
    if (!verifier) return refuse('no_secret');
    const v = verifier.check(req.headers, {
      method: req.method,
      path: req.originalUrl,
      body: req.rawBody ?? Buffer.alloc(0),
    });
    if (!v.ok)
      return refuse(
        v.reason,
        typeof req.headers[NODE_HEADERS.node] === 'string' ? (req.headers[NODE_HEADERS.node] as string) : undefined,
      );
    (async () => {
      // The nonce claim and the two reads are independent: one round trip's wait, not three.
      const [fresh, nodes, user] = await Promise.all([
        verifier.claim(v),
        listNodes(ctx.database.sql, ctx.config.node.lostS),
        v.userId === null ? undefined : getUserById(ctx.database.sql, v.userId),
      ]);
      if (!fresh) return refuse('replayed', v.node);
      if (!nodes.some((n) => n.id === v.node && n.id !== ctx.config.node.id)) return refuse('unknown_node', v.node);
      if (v.userId !== null) {
        if (!user?.is_active) return refuse('inactive_user', v.node);
        req.user = user;
        req.log = req.log.child({ userId: user.id, fromNode: v.node });
      }
      req.fleetForwarded = true;
      next();
    })().catch(next);
  };
}

/** The runtime's operator API (web/ports.ts). */
export type { OperatorPort } from './ports.js';

/**
 * What another node may send here: an operator command, and for chats a new turn, following a
 * turn's events, and cancelling it —
 * answered by the very chat routes (and turn registry) the browser uses. Nothing else of the chat
 * API is reachable under /api/fleet.
 */
export function fleetRoutes(ctx: WebContext, chat: RequestHandler): Router {
  const r = Router();
  // `airlock sessions inspect|restart|kill` run on another node for a session this node owns.
  // Logged once done (a node without sandboxes answers ERR_SESSION_UNAVAILABLE, logged as a failed request).
  r.post('/operator', (req, res, next) => {
    ctx.services.operator(req.body).then((result) => {
      req.log.info(
        { cmd: (req.body as { cmd?: unknown })?.cmd, fromNode: req.headers[NODE_HEADERS.node] },
        'operator command from another node',
      );
      res.json({ result } satisfies OperatorAnswer);
    }, next);
  });
  const viaChat: RequestHandler = (req, res, next) => {
    req.url = req.originalUrl.slice('/api/fleet/chat'.length) || '/';
    chat(req, res, next);
  };
  r.post('/chat/messages', viaChat);
  r.get('/chat/sessions/:id/turns/:turnId/events', viaChat);
  r.post('/chat/sessions/:id/turns/:turnId/cancel', viaChat);
  r.post('/chat/sessions/:id/approvals/:approvalId', viaChat);
  r.get('/chat/sessions/:id/approvals/:approvalId/preview', viaChat);
  r.get('/chat/sessions/:id/approvals/:approvalId/attachments/:n', viaChat);
  r.get('/chat/attachments/:name', viaChat);
  r.get('/chat/attachments/:name/preview', viaChat);
  return r;
}
