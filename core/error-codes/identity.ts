import type { ErrorArea } from './types.js';

/** Users, organisations, teams, agent policies and directory sync. */
export const IDENTITY_ERRORS = {
  ERR_USER_NOT_FOUND: { status: 404, surfaces: ['http'], description: 'No such user.' },
  ERR_USER_EXISTS: {
    status: 409,
    surfaces: ['control'],
    description: '`airlock create-superuser`: a user with that name exists.',
  },
  ERR_USER_SELF: {
    status: 409,
    surfaces: ['http'],
    description:
      'An admin tried to deactivate, demote or reset the password of their own account (their own password is changed under Settings).',
  },
  ERR_USER_LAST_SUPERUSER: {
    status: 409,
    surfaces: ['http'],
    description: 'The change would leave no active superuser.',
  },
  ERR_ORG_NOT_FOUND: { status: 404, surfaces: ['http'], description: 'No such organisation.' },
  ERR_ORG_EXISTS: { status: 409, surfaces: ['http'], description: 'An organisation with that name exists.' },
  ERR_TEAM_NOT_FOUND: { status: 404, surfaces: ['http'], description: 'No such team.' },
  ERR_TEAM_EXISTS: {
    status: 409,
    surfaces: ['http'],
    description: 'A team with that name (or linked to that group) exists in the organisation.',
  },
  ERR_TEAM_LINKED: {
    status: 409,
    surfaces: ['http'],
    description: 'The team follows an external group; its members change only through directory sync.',
  },
  ERR_GROUP_NOT_FOUND: { status: 404, surfaces: ['http'], description: 'No such synced external group.' },
  ERR_POLICY_NOT_FOUND: { status: 404, surfaces: ['http'], description: 'No such agent policy.' },
  ERR_POLICY_EXISTS: {
    status: 409,
    surfaces: ['http'],
    description: 'An agent policy with that name exists in the organisation.',
  },
  ERR_POLICY_INVALID: {
    status: 400,
    surfaces: ['http'],
    description:
      'The agent policy names a tool or model that does not exist, or applies to chosen teams with none chosen.',
  },
  ERR_POLICY_MODEL_DENIED: {
    status: 403,
    surfaces: ['http', 'turn'],
    description:
      "The user's agent policy does not allow the chat's model: it cannot be chosen, and a chat on it does not start.",
  },
  ERR_SYNC_NOT_CONFIGURED: {
    status: 409,
    surfaces: ['http'],
    description: 'The IdP connection has no service account or delegated admin e-mail for directory sync.',
  },
  ERR_SYNC_JOB_NOT_FOUND: { status: 404, surfaces: ['http'], description: 'No such directory-sync job.' },
  ERR_SYNC_JOB_LOST: {
    status: 409,
    surfaces: ['job'],
    description: 'Another process failed this job while it ran (its owner looked gone); nothing was applied.',
  },
  ERR_SYNC_INTERRUPTED: {
    status: 500,
    surfaces: ['job'],
    description: 'The process running the job stopped before it finished; a new run starts over.',
  },
  ERR_SYNC_FAILED: {
    status: 500,
    surfaces: ['job'],
    description: 'The sync failed for a reason without a code of its own.',
  },
  ERR_SYNC_TEAMS_FAILED: {
    status: 500,
    surfaces: ['job'],
    description: 'The linked-teams step failed; no directory change was kept.',
  },
  ERR_SYNC_UPSTREAM: {
    status: 502,
    surfaces: ['job'],
    description: 'The directory API cannot be reached or answered an error.',
  },
  ERR_SYNC_AUTH: { status: 502, surfaces: ['job'], description: 'The token endpoint refused the service account.' },
  ERR_SYNC_SERVICE_ACCOUNT: {
    status: 500,
    surfaces: ['job'],
    description: 'The stored service-account private key cannot be read.',
  },
  ERR_SYNC_EMPTY_DIRECTORY: {
    status: 502,
    surfaces: ['job'],
    description: 'The directory listed no users while some are known; nothing was changed.',
  },
} as const satisfies ErrorArea;
