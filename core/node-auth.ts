import { createHash, createHmac, randomBytes } from 'node:crypto';
import { safeEqual } from './secret.js';

/**
 * Requests one node of a fleet sends another (a chat turn, a cancel, an attachment, an operator
 * command forwarded to the node that owns the session). The browser's cookie and CSRF token stay
 * on the receiving node, which has authenticated the user; the owner trusts the user id because
 * the request is signed with the fleet's shared AIRLOCK_NODE_SECRET:
 *
 *   X-Airlock-Node: <sending node id>
 *   X-Airlock-Node-Time: <unix ms>
 *   X-Airlock-Node-Nonce: <random>
 *   X-Airlock-Node-User: <user id the receiving node authenticated>
 *   X-Airlock-Node-Signature: v1=<hex HMAC-SHA256 of the canonical string below>
 *
 * canonical = "v1\n" METHOD "\n" PATH?QUERY "\n" node "\n" time "\n" nonce "\n" user "\n" hex(SHA-256(body))
 *
 * The owner refuses a wrong signature, an unknown sending node, a time more than NODE_AUTH_SKEW_MS
 * away from its clock, and a nonce it has already seen within that window (a replay).
 */
export const NODE_HEADERS = {
  node: 'x-airlock-node',
  time: 'x-airlock-node-time',
  nonce: 'x-airlock-node-nonce',
  user: 'x-airlock-node-user',
  signature: 'x-airlock-node-signature',
} as const;

export const NODE_AUTH_SKEW_MS = 30_000;

export interface NodeRequestParts {
  method: string;
  /** Path and query as sent, e.g. /api/fleet/chat/messages?x=1 */
  path: string;
  node: string;
  userId: number | null;
  body: Buffer | string;
}

function canonical(p: NodeRequestParts, time: string, nonce: string): string {
  const bodyHash = createHash('sha256').update(p.body).digest('hex');
  return ['v1', p.method.toUpperCase(), p.path, p.node, time, nonce, p.userId === null ? '' : String(p.userId), bodyHash].join('\n');
}

/** The headers that authenticate one request from `p.node`. */
export function signNodeRequest(secret: string, p: NodeRequestParts, now = Date.now()): Record<string, string> {
  const time = String(now);
  const nonce = randomBytes(12).toString('hex');
  const mac = createHmac('sha256', secret).update(canonical(p, time, nonce)).digest('hex');
  const h: Record<string, string> = { [NODE_HEADERS.node]: p.node, [NODE_HEADERS.time]: time, [NODE_HEADERS.nonce]: nonce, [NODE_HEADERS.signature]: `v1=${mac}` };
  if (p.userId !== null) h[NODE_HEADERS.user] = String(p.userId);
  return h;
}

export type NodeAuthFailure = 'missing' | 'bad_signature' | 'stale' | 'replayed' | 'unknown_node' | 'malformed';

/**
 * Checks the signature, the clock window and replays. `seen` remembers nonces for the window
 * (the caller keeps one per process). The sending node must also be known to the fleet: the
 * caller checks `node` against the nodes table.
 */
export class NodeRequestVerifier {
  readonly #secret: string;
  readonly #seen = new Map<string, number>();

  constructor(secret: string) {
    this.#secret = secret;
  }

  verify(headers: Record<string, string | string[] | undefined>, p: Omit<NodeRequestParts, 'node' | 'userId'>, now = Date.now()): { ok: true; node: string; userId: number | null } | { ok: false; reason: NodeAuthFailure } {
    const one = (k: string) => {
      const v = headers[k];
      return Array.isArray(v) ? undefined : v;
    };
    const node = one(NODE_HEADERS.node);
    const time = one(NODE_HEADERS.time);
    const nonce = one(NODE_HEADERS.nonce);
    const sig = one(NODE_HEADERS.signature);
    const user = one(NODE_HEADERS.user);
    if (!node || !time || !nonce || !sig) return { ok: false, reason: 'missing' };
    if (!/^\d{1,15}$/.test(time) || !/^[0-9a-f]{24}$/.test(nonce) || !/^v1=[0-9a-f]{64}$/.test(sig) || (user !== undefined && !/^\d{1,12}$/.test(user))) {
      return { ok: false, reason: 'malformed' };
    }
    const userId = user === undefined ? null : Number(user);
    const expected = `v1=${createHmac('sha256', this.#secret).update(canonical({ ...p, node, userId }, time, nonce)).digest('hex')}`;
    if (!safeEqual(expected, sig)) return { ok: false, reason: 'bad_signature' };
    if (Math.abs(now - Number(time)) > NODE_AUTH_SKEW_MS) return { ok: false, reason: 'stale' };
    for (const [n, at] of this.#seen) if (now - at > 2 * NODE_AUTH_SKEW_MS) this.#seen.delete(n);
    if (this.#seen.has(nonce)) return { ok: false, reason: 'replayed' };
    this.#seen.set(nonce, now);
    return { ok: true, node, userId };
  }
}
