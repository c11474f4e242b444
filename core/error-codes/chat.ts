import type { ErrorArea } from './types.js';

/** Chat, chat sessions, memories and the connected workspace account. */
export const CHAT_ERRORS = {
  ERR_CHAT_UNAVAILABLE: {
    status: 503,
    surfaces: ['http'],
    description: 'No turn runner on this server (chat is not available).',
  },
  ERR_CHAT_SESSION_NOT_FOUND: {
    status: 404,
    surfaces: ['http'],
    description: "No such chat session (or another user's).",
  },
  ERR_APPROVAL_NOT_FOUND: {
    status: 404,
    surfaces: ['http'],
    description: "No such pending approval in this chat session (never held here, or another user's).",
  },
  ERR_APPROVAL_DECIDED: {
    status: 409,
    surfaces: ['http'],
    description: 'The held send was already decided (approved, denied or timed out).',
  },
  ERR_APPROVAL_PREVIEW_GONE: {
    status: 410,
    surfaces: ['http'],
    description: 'The held send was decided: its message (body, attachments) is no longer kept to be shown.',
  },
  ERR_CHAT_TURN_NOT_FOUND: { status: 404, surfaces: ['http'], description: 'No such turn in this chat session.' },
  ERR_CHAT_REPLACE_OFF_BRANCH: {
    status: 409,
    surfaces: ['http'],
    description:
      'The turn to edit or regenerate (replaces_turn_id) is not on the branch shown; switch to its branch first.',
  },
  ERR_CHAT_TURN_LOST: {
    status: 503,
    surfaces: ['turn'],
    description: 'The server restarted while the turn ran; its stored record ends with this error.',
  },
  ERR_CHAT_MODEL_NOT_FOUND: {
    status: 404,
    surfaces: ['http'],
    description: 'No such chat model, or one that is disabled (admin API: no entry with that id).',
  },
  ERR_CHAT_MODEL_EXISTS: { status: 409, surfaces: ['http'], description: 'A chat model with that id exists already.' },
  ERR_CHAT_MODEL_DEFAULT: {
    status: 409,
    surfaces: ['http'],
    description: 'The default chat model (from AIRLOCK_MODEL_*) cannot be disabled or deleted.',
  },
  ERR_CHAT_ATTACHMENT_NOT_FOUND: {
    status: 404,
    surfaces: ['http'],
    description: "No such chart attachment in the caller's workspace.",
  },
  ERR_SHARE_NOT_FOUND: {
    status: 404,
    surfaces: ['http'],
    description:
      "No such shared chat: the link is wrong or revoked, its chat is gone, or the caller may not open it (not of the owner's organisation).",
  },
  ERR_FEEDBACK_TURN_RUNNING: {
    status: 409,
    surfaces: ['http'],
    description: 'The answer is still running: rate it when it ends.',
  },
  ERR_SESSION_BUSY: {
    status: 409,
    surfaces: ['http', 'turn', 'control'],
    description: 'A turn is already running in this session (or the operator acts on a busy session).',
  },
  ERR_SESSION_USER_LIMIT: {
    status: 429,
    surfaces: ['http'],
    description:
      'The user holds as many live sandboxes on this host as AIRLOCK_MAX_SANDBOXES_PER_USER allows and none is idle; finish or wait for one.',
  },
  ERR_SESSION_CAPACITY: {
    status: 503,
    surfaces: ['http'],
    description: 'This host runs as many sessions as it may; try again later.',
  },
  ERR_SESSION_NOT_FOUND: {
    status: 404,
    surfaces: ['http', 'control'],
    description: 'No live session or container with that id.',
  },
  ERR_SESSION_UNAVAILABLE: { status: 503, surfaces: ['http'], description: 'The daemon is shutting down; try again.' },
  ERR_MEMORY_LIMIT: { status: 409, surfaces: ['http'], description: 'The user has the most memory entries allowed.' },
  ERR_MEMORY_NOT_FOUND: { status: 404, surfaces: ['http'], description: "No such memory entry (or another user's)." },
  ERR_MEMORY_SOURCE_REFUSED: {
    status: 403,
    surfaces: ['http'],
    description: 'Memory entries of a withheld source (`bi`) are not given to the agent.',
  },
  ERR_ACCOUNT_NOT_CONFIGURED: {
    status: 503,
    surfaces: ['http'],
    description: 'Workspace account connection is off: AIRLOCK_GOOGLE_CLIENT_ID is not set.',
  },
  ERR_ACCOUNT_STATE: {
    status: 400,
    surfaces: ['http'],
    description: 'Unknown, foreign or expired account-connect state.',
  },
  ERR_ACCOUNT_RETURN_TO: {
    status: 400,
    surfaces: ['http'],
    description: 'return_to is not a path on this origin (checked after resolution).',
  },
  ERR_ACCOUNT_DENIED: {
    status: 400,
    surfaces: ['http'],
    description: 'The provider did not grant access to the workspace account.',
  },
  ERR_ACCOUNT_OAUTH: {
    status: 502,
    surfaces: ['http'],
    description: "The provider's token endpoint is unreachable or refused the grant.",
  },
  ERR_ACCOUNT_NOT_CONNECTED: {
    status: 409,
    surfaces: ['start'],
    description: 'The user has no connected workspace account (token refresh).',
  },
  ERR_ACCOUNT_REFRESH: {
    status: 502,
    surfaces: ['start'],
    description: 'The workspace access token could not be refreshed.',
  },
} as const satisfies ErrorArea;
