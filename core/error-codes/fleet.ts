import type { ErrorArea } from './types.js';

/** A fleet of nodes sharing one PostgreSQL database: requests forwarded to a session's owner node. */
export const FLEET_ERRORS = {
  ERR_NODE_AUTH: { status: 401, surfaces: ['http'], description: 'A request between nodes without a valid signature: wrong AIRLOCK_NODE_SECRET, unknown node, clock more than 30 s off, or a replay.' },
  ERR_NODE_UNREACHABLE: { status: 503, surfaces: ['http', 'control'], description: "The node that owns this session does not answer yet; retry (after AIRLOCK_NODE_LOST_S of silence another node takes the session over)." },
  ERR_NODE_BAD_ANSWER: { status: 502, surfaces: ['http', 'control'], description: 'Another node answered a request between nodes with a body that is neither `{"result"}` nor a coded `{"error"}`.' },
} as const satisfies ErrorArea;
