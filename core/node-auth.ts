import { createHash, createHmac, randomBytes } from 'node:crypto';
import { safeEqual } from './secret.js';

/**
 * Requests one node of a fleet sends another (a chat turn, a cancel, an attachment, an operator
 * command forwarded to the node that owns the session, an attach upgrade). The browser's cookie
 * and CSRF token stay on the receiving node, which has authenticated the user; the owner trusts
 * the user id because the request is signed with the fleet's shared AIRLOCK_NODE_SECRET:
 *
 *   X-Airlock-Node: <sending node id>
 *   X-Airlock-Node-To: <receiving node id>
 *   X-Airlock-Node-Time: <unix ms>
 *   X-Airlock-Node-Nonce: <random, 96 bits as 24 hex digits>
 *   X-Airlock-Node-User: <user id the sending node authenticated>
 *   X-Airlock-Node-Signature: v2=<hex HMAC-SHA256 of the canonical string below>
 *
 * canonical = "v2\n" METHOD "\n" PATH?QUERY "\n" from "\n" to "\n" time "\n" nonce "\n" user "\n" hex(SHA-256(body))
 *
 * The receiver verifies with its own node id as `to`, so a request signed for one node is refused
 * by every other. It refuses a wrong signature, a time more than NODE_AUTH_SKEW_MS away from its
 * clock, and a nonce already used (the nonce store is the fleet's database: `node_nonces`,
 * docs/deploy.md), so a replay fails on any node, after a restart too. Bodies are buffered JSON
 * (at most AIRLOCK_BODY_LIMIT_KB), hashed whole; the one stream between nodes, the attach
 * upgrade, is signed with the empty body and its frames ride the connection the signed
 * handshake opened.
 */
export const NODE_HEADERS = {
  node: 'x-airlock-node',
  to: 'x-airlock-node-to',
  time: 'x-airlock-node-time',
  nonce: 'x-airlock-node-nonce',
  user: 'x-airlock-node-user',
  signature: 'x-airlock-node-signature',
} as const;

export const NODE_AUTH_SKEW_MS = 30_000;

/** A user id as a header or query carries it: digits, no leading zero, a safe integer. */
export const STRICT_ID_RE = /^[1-9][0-9]{0,14}$/;

export interface NodeRequestParts {
  method: string;
  /** Path and query as sent, e.g. /api/fleet/chat/messages?x=1 */
  path: string;
  /** The sending node. */
  node: string;
  /** The receiving node. */
  to: string;
  userId: number | null;
  body: Buffer | string;
}

function canonical(p: NodeRequestParts, time: string, nonce: string): string {
  const bodyHash = createHash('sha256').update(p.body).digest('hex');
  return [
    'v2',
    p.method.toUpperCase(),
    p.path,
    p.node,
    p.to,
    time,
    nonce,
    p.userId === null ? '' : String(p.userId),
    bodyHash,
  ].join('\n');
}

/** The headers that authenticate one request from `p.node` to `p.to`. */
export function signNodeRequest(secret: string, p: NodeRequestParts, now = Date.now()): Record<string, string> {
  const time = String(now);
  const nonce = randomBytes(12).toString('hex');
  const mac = createHmac('sha256', secret)
    .update(canonical(p, time, nonce))
    .digest('hex');
  const h: Record<string, string> = {
    [NODE_HEADERS.node]: p.node,
    [NODE_HEADERS.to]: p.to,
    [NODE_HEADERS.time]: time,
    [NODE_HEADERS.nonce]: nonce,
    [NODE_HEADERS.signature]: `v2=${mac}`,
  };
  if (p.userId !== null) h[NODE_HEADERS.user] = String(p.userId);
  return h;
}

export type NodeAuthFailure =
  'missing' | 'bad_signature' | 'stale' | 'replayed' | 'unknown_node' | 'malformed' | 'wrong_receiver';

/**
 * Records a nonce until `expiresAt` (unix ms); false when it was already recorded (a replay).
 * The fleet's is an insert into `node_nonces` (domain/fleet.ts: claimNonce).
 */
export type NonceClaim = (nonce: string, node: string, expiresAt: number) => Promise<boolean>;

export type NodeVerdict = { ok: true; node: string; userId: number | null } | { ok: false; reason: NodeAuthFailure };

/**
 * Checks the receiver, the signature, the clock window and replays. The sending node must also
 * be known to the fleet: the caller checks `node` against the nodes table.
 */
export class NodeRequestVerifier {
  readonly #secret: string;
  readonly #self: string;
  readonly #claim: NonceClaim;

  constructor(secret: string, self: string, claim: NonceClaim) {
    this.#secret = secret;
    this.#self = self;
    this.#claim = claim;
  }

  /** The signature alone (no nonce recorded): for tests and for the checks before the claim. */
  check(
    headers: Record<string, string | string[] | undefined>,
    p: Omit<NodeRequestParts, 'node' | 'userId' | 'to'>,
    now = Date.now(),
  ): NodeVerdict & { nonce?: string; time?: number } {
    // A header sent twice (an array here, or "a, b" once joined) is malformed, never one of them.
    if (Object.values(NODE_HEADERS).some((k) => Array.isArray(headers[k]))) return { ok: false, reason: 'malformed' };
    const one = (k: string) => {
      const v = headers[k];
      return Array.isArray(v) ? undefined : v;
    };
    const node = one(NODE_HEADERS.node);
    const to = one(NODE_HEADERS.to);
    const time = one(NODE_HEADERS.time);
    const nonce = one(NODE_HEADERS.nonce);
    const sig = one(NODE_HEADERS.signature);
    const user = one(NODE_HEADERS.user);
    if (!node || !to || !time || !nonce || !sig) return { ok: false, reason: 'missing' };
    if (
      !/^[1-9][0-9]{0,14}$/.test(time) ||
      !/^[0-9a-f]{24}$/.test(nonce) ||
      !/^v2=[0-9a-f]{64}$/.test(sig) ||
      (user !== undefined && !STRICT_ID_RE.test(user))
    ) {
      return { ok: false, reason: 'malformed' };
    }
    if (to !== this.#self) return { ok: false, reason: 'wrong_receiver' };
    const userId = user === undefined ? null : Number(user);
    const expected = `v2=${createHmac('sha256', this.#secret)
      .update(canonical({ ...p, node, to: this.#self, userId }, time, nonce))
      .digest('hex')}`;
    if (!safeEqual(expected, sig)) return { ok: false, reason: 'bad_signature' };
    if (Math.abs(now - Number(time)) > NODE_AUTH_SKEW_MS) return { ok: false, reason: 'stale' };
    return { ok: true, node, userId, nonce, time: Number(time) };
  }

  /**
   * Claim the nonce of a request check() passed, fleet-wide, for the rest of its window (plus a
   * second of slack for clocks); false: it was used before (a replay).
   */
  claim(c: { node: string; nonce?: string; time?: number }): Promise<boolean> {
    if (c.nonce === undefined || c.time === undefined) return Promise.resolve(false);
    return this.#claim(c.nonce, c.node, c.time + NODE_AUTH_SKEW_MS + 1000);
  }

  /** check(), then claim(). */
  async verify(
    headers: Record<string, string | string[] | undefined>,
    p: Omit<NodeRequestParts, 'node' | 'userId' | 'to'>,
    now = Date.now(),
  ): Promise<NodeVerdict> {
    const c = this.check(headers, p, now);
    if (!c.ok) return c;
    if (!(await this.claim(c))) return { ok: false, reason: 'replayed' };
    return { ok: true, node: c.node, userId: c.userId };
  }
}
