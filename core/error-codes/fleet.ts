import type { ErrorArea } from './types.js';

/** A fleet of nodes sharing one PostgreSQL database: requests forwarded to a session's owner node. */
export const FLEET_ERRORS = {
  ERR_NODE_AUTH: {
    status: 401,
    surfaces: ['http'],
    description:
      'A request between nodes without a valid signature: wrong AIRLOCK_NODE_SECRET, unknown node, signed for another node, clock more than 30 s off, or a replay (on any node).',
  },
  ERR_NODE_UNREACHABLE: {
    status: 503,
    surfaces: ['http', 'control'],
    description:
      'The node that owns this session does not answer yet; retry (after AIRLOCK_NODE_LOST_S of silence another node takes the session over).',
  },
  ERR_NODE_BAD_ANSWER: {
    status: 502,
    surfaces: ['http', 'control'],
    description:
      'Another node answered a request between nodes with a body that is neither `{"result"}` nor a coded `{"error"}`.',
  },
  ERR_NODE_PLAIN_HTTP: {
    status: 503,
    surfaces: ['http', 'control'],
    description:
      "Another node's AIRLOCK_NODE_URL is plain http and AIRLOCK_FLEET_ALLOW_HTTP is off: requests between nodes go over https.",
  },
} as const satisfies ErrorArea;
