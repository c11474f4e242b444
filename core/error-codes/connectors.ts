import type { ErrorArea } from './types.js';

/**
 * Connectors: remote MCP servers an admin registers (docs/connectors.md). The registry's codes
 * answer the admin API and the CLI; the call codes reach the model as a tool result (`tool`) and
 * the in-sandbox proxy as the gateway's answer (`proxy`).
 */
export const CONNECTOR_ERRORS = {
  ERR_CONNECTOR_NOT_FOUND: { status: 404, surfaces: ['http', 'control'], description: 'No connector with this id.' },
  ERR_CONNECTOR_EXISTS: {
    status: 409,
    surfaces: ['http', 'control'],
    description: 'A connector with this id exists already.',
  },
  ERR_CONNECTOR_URL: {
    status: 400,
    surfaces: ['http', 'control'],
    description:
      'The server URL is not usable: not https (plain http only on a loopback address with AIRLOCK_CONNECTORS_ALLOW_HTTP_LOOPBACK), credentials or a fragment in it, or malformed.',
  },
  ERR_CONNECTOR_AUTH: {
    status: 400,
    surfaces: ['http', 'control'],
    description:
      "The connector's authentication settings do not fit its kind (a header name for 'header', a secret for 'header' and 'bearer').",
  },
  ERR_CONNECTOR_DISCOVERY: {
    status: 502,
    surfaces: ['http', 'control'],
    description:
      'The MCP server could not be reached, or did not answer initialize and tools/list as MCP (neither Streamable HTTP nor HTTP+SSE); nothing was saved.',
  },
  ERR_CONNECTOR_TOOLS_INVALID: {
    status: 502,
    surfaces: ['http', 'control'],
    description:
      'The server listed tools Airlock cannot offer: too many, two with one name, a schema that is not a JSON object schema or is over the size limit; nothing was saved.',
  },
  ERR_CONNECTOR_TOOL_NOT_FOUND: {
    status: 404,
    surfaces: ['http', 'control', 'tool', 'proxy'],
    description: 'The connector has no (enabled) tool of this name.',
  },
  ERR_CONNECTOR_DENIED: {
    status: 403,
    surfaces: ['tool', 'proxy'],
    description:
      "The user may not use this connector or tool now: not in its audience, denied by the agent policy, or the connector or tool was disabled (takes effect at the session's next call).",
  },
  ERR_CONNECTOR_NOT_CONNECTED: {
    status: 409,
    surfaces: ['tool', 'proxy', 'http'],
    description:
      'An OAuth connector the user has not connected: the model is told to ask the user to connect it (the chat shows "Connect <label>"); an admin refreshing its tools without having connected it is told to connect first.',
  },
  ERR_CONNECTOR_UPSTREAM: {
    status: 502,
    surfaces: ['tool', 'proxy'],
    description:
      "The connector's MCP server failed the call: unreachable, went away mid-call, answered garbage or an answer over the size limit.",
  },
  ERR_CONNECTOR_TIMEOUT: {
    status: 504,
    surfaces: ['tool', 'proxy'],
    description: "The connector's MCP server did not answer the call in time.",
  },
  ERR_CONNECTOR_BUSY: {
    status: 503,
    surfaces: ['tool', 'proxy'],
    description: 'Too many connector calls of this session at once.',
  },
  ERR_CONNECTOR_APPROVAL_DENIED: {
    status: 403,
    surfaces: ['tool', 'proxy'],
    description:
      'The user declined a call of a tool marked ask, or did not answer in time, or nobody could be asked (no chat turn running), or the approved call was already made.',
  },
  ERR_CONNECTOR_APPROVAL_MISMATCH: {
    status: 403,
    surfaces: ['tool', 'proxy'],
    description:
      'A second call under a tool call id the user approved, with other arguments than the approved ones: refused, and no new card.',
  },
} as const satisfies ErrorArea;
