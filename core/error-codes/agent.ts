import type { ErrorArea } from './types.js';

/**
 * The agent child, its model calls and its MCP tools. Tool codes never travel as an HTTP
 * status (a tool answers `isError: true`); their status says what the failure is like.
 */
export const AGENT_ERRORS = {
  ERR_AGENT_CONFIG: {
    status: 500,
    surfaces: ['start'],
    description: "The agent child's settings (its environment) are invalid.",
  },
  ERR_AGENT_INTERNAL: { status: 500, surfaces: ['turn'], description: 'The agent loop failed unexpectedly.' },
  ERR_AGENT_CONTEXT_STALE: {
    status: 409,
    surfaces: ['control'],
    description:
      'A prompt named a conversation the agent does not hold and brought none; the daemon sends it again with the stored transcript (never seen by a user).',
  },
  ERR_MODEL_HTTP: { status: 502, surfaces: ['turn'], description: 'The model endpoint answered an HTTP error.' },
  ERR_MODEL_AUTH: { status: 502, surfaces: ['turn'], description: 'The model endpoint refused the key (401/403).' },
  ERR_MODEL_STREAM: {
    status: 502,
    surfaces: ['turn'],
    description: "The model's stream was malformed, reported an error, or ended early.",
  },
  ERR_MODEL_SDK: {
    status: 502,
    surfaces: ['turn'],
    description: 'The official model client library (openai, @anthropic-ai/sdk) could not be loaded in the sandbox.',
  },
  ERR_MODEL_TIMEOUT: {
    status: 502,
    surfaces: ['turn'],
    description:
      'The model did not start answering within AIRLOCK_MODEL_FIRST_BYTE_TIMEOUT_S, or stopped for AIRLOCK_MODEL_TIMEOUT_S mid-answer.',
  },
  ERR_MODEL_UNREACHABLE: {
    status: 502,
    surfaces: ['turn'],
    description:
      'The model endpoint could not be reached (refused, reset or no connection in time), after the retries.',
  },
  ERR_TURN_TIMEOUT: {
    status: 504,
    surfaces: ['turn'],
    description: 'The turn ran longer than AIRLOCK_TURN_TIMEOUT_S in all and was stopped.',
  },
  ERR_TOOL_UNKNOWN: {
    status: 404,
    surfaces: ['tool'],
    description: 'The model called a tool this session does not have.',
  },
  ERR_TOOL_FAILED: { status: 502, surfaces: ['tool'], description: 'An MCP tool call failed at the protocol level.' },
  ERR_TOOL_TIMEOUT: {
    status: 504,
    surfaces: ['tool'],
    description: 'A tool call did not answer within AIRLOCK_TOOL_TIMEOUT_S; the model carries on with the error.',
  },
  ERR_TOOL_INTERNAL: {
    status: 500,
    surfaces: ['tool'],
    description: 'A tool failed unexpectedly (details only in its stderr log).',
  },
  ERR_TOOL_INVALID_INPUT: {
    status: 400,
    surfaces: ['tool'],
    description: "The tool's arguments are inconsistent (no body, an attachment twice).",
  },
  ERR_TOOL_NOT_CONNECTED: {
    status: 409,
    surfaces: ['tool'],
    description: 'The user has no connected workspace account in this session.',
  },
  ERR_TOOL_TOKEN_EXPIRED: {
    status: 401,
    surfaces: ['tool'],
    description: 'The access token expired in this session; a new chat session gets a fresh one.',
  },
  ERR_TOOL_FORBIDDEN: {
    status: 403,
    surfaces: ['tool'],
    description: 'The workspace service or the proxy refused the call.',
  },
  ERR_TOOL_NOT_FOUND: {
    status: 404,
    surfaces: ['tool'],
    description: 'The workspace service found nothing at that id.',
  },
  ERR_TOOL_BAD_REQUEST: {
    status: 400,
    surfaces: ['tool'],
    description: 'The workspace service refused the request as malformed.',
  },
  ERR_TOOL_RATE_LIMITED: { status: 429, surfaces: ['tool'], description: 'The workspace service is rate limiting.' },
  ERR_TOOL_UPSTREAM_FAILED: { status: 502, surfaces: ['tool'], description: 'The workspace service failed (5xx).' },
  ERR_TOOL_UPSTREAM_BAD_RESPONSE: {
    status: 502,
    surfaces: ['tool'],
    description: 'The workspace service answered something unexpected or too large.',
  },
  ERR_TOOL_UPSTREAM_TIMEOUT: {
    status: 504,
    surfaces: ['tool'],
    description: 'The workspace service did not answer in time.',
  },
  ERR_TOOL_UPSTREAM_UNREACHABLE: {
    status: 502,
    surfaces: ['tool'],
    description: 'The workspace service could not be reached.',
  },
  ERR_TOOL_MESSAGE_BUILD: {
    status: 500,
    surfaces: ['tool'],
    description: 'send_email could not build the MIME message.',
  },
  ERR_TOOL_ATTACHMENT_NAME: {
    status: 400,
    surfaces: ['tool'],
    description: 'An attachment is not a file name rasterize_chart returned (a UUID + .png).',
  },
  ERR_TOOL_ATTACHMENT_NOT_FOUND: {
    status: 404,
    surfaces: ['tool'],
    description: 'The attachment does not exist or cannot be read.',
  },
  ERR_TOOL_ATTACHMENT_NOT_FILE: {
    status: 400,
    surfaces: ['tool'],
    description: 'The attachment is not a regular file (a symlink, a folder).',
  },
  ERR_PYTHON_EXCEPTION: {
    status: 422,
    surfaces: ['tool'],
    description:
      'run_python: the code raised an exception; the message carries its traceback. The interpreter and its state are kept.',
  },
  ERR_PYTHON_TIMEOUT: {
    status: 504,
    surfaces: ['tool'],
    description: 'run_python: the call ran past AIRLOCK_PYTHON_WALL_S; the interpreter was ended (its state is gone).',
  },
  ERR_PYTHON_CPU_LIMIT: {
    status: 422,
    surfaces: ['tool'],
    description:
      'run_python: the code ignored the CPU-time limit (AIRLOCK_PYTHON_CPU_S) and was killed by it; the interpreter was ended.',
  },
  ERR_PYTHON_OUTPUT_LIMIT: {
    status: 422,
    surfaces: ['tool'],
    description: 'run_python: the call printed more than AIRLOCK_PYTHON_OUTPUT_KB; the interpreter was ended.',
  },
  ERR_PYTHON_PROCESS_LIMIT: {
    status: 422,
    surfaces: ['tool'],
    description:
      'run_python: the code held more than AIRLOCK_PYTHON_PROCS processes or threads; the interpreter and all it started were ended.',
  },
  ERR_PYTHON_CANCELLED: {
    status: 499,
    surfaces: ['tool'],
    description: 'run_python: the user pressed Stop; the interpreter was ended.',
  },
  ERR_PYTHON_EXITED: {
    status: 500,
    surfaces: ['tool'],
    description:
      'run_python: the interpreter ended during the call (sys.exit, a crash, a signal); the next call starts a fresh one.',
  },
  ERR_PYTHON_UNAVAILABLE: {
    status: 503,
    surfaces: ['tool'],
    description: 'run_python: Python could not be started in this sandbox (an image without python3).',
  },
  ERR_TOOL_ATTACHMENT_NOT_PNG: { status: 400, surfaces: ['tool'], description: 'The attachment is not a PNG image.' },
  ERR_TOOL_ATTACHMENT_CONTENT: {
    status: 400,
    surfaces: ['tool'],
    description:
      'A file from out/ does not hold what its extension says (an XLSX that is not a zip, an SVG without <svg>, a text file with NUL bytes).',
  },
  ERR_TOOL_ATTACHMENT_TOO_LARGE: {
    status: 413,
    surfaces: ['tool'],
    description: 'An attachment, or all of them together, is too large (or changed while read).',
  },
  ERR_TOOL_ATTACHMENTS_DIR: {
    status: 500,
    surfaces: ['tool'],
    description: 'The attachments folder cannot be written.',
  },
  ERR_TOOL_DISK_FULL: {
    status: 507,
    surfaces: ['tool'],
    description: 'The workspace is full; the chart could not be saved.',
  },
  ERR_TOOL_MEMORY_UNAVAILABLE: {
    status: 503,
    surfaces: ['tool'],
    description: 'Memory is not available in this chat session (no host route, or the token expired).',
  },
  ERR_TOOL_MEMORY_REFUSED: {
    status: 403,
    surfaces: ['tool'],
    description: "The memory entry's source is withheld from the assistant.",
  },
} as const satisfies ErrorArea;
