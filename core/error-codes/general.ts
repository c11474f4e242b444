import type { ErrorArea } from './types.js';

/** Codes shared by every area: validation, routing, internal failures, config, crypto, db, CLI, UI. */
export const GENERAL_ERRORS = {
  ERR_VALIDATION: {
    status: 400,
    surfaces: ['http', 'control'],
    description: 'A field, query parameter or JSON body is missing or malformed (details may name the field).',
  },
  ERR_BODY_TOO_LARGE: {
    status: 413,
    surfaces: ['http'],
    description: 'The request body is larger than AIRLOCK_BODY_LIMIT_KB.',
  },
  ERR_HTTP_UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    surfaces: ['http'],
    description: 'An /api request body that is not application/json.',
  },
  ERR_HTTP_UNSUPPORTED_ENCODING: {
    status: 415,
    surfaces: ['http'],
    description: 'An /api request body with a Content-Encoding other than identity (gzip, deflate, br).',
  },
  ERR_BODY_ENCODING: {
    status: 415,
    surfaces: ['http'],
    description: 'The request body uses a content-encoding or charset the server does not read.',
  },
  ERR_NOT_FOUND: { status: 404, surfaces: ['http'], description: 'No route answers this method and path under /api.' },
  ERR_INTERNAL: {
    status: 500,
    surfaces: ['http', 'control', 'job'],
    description: 'An unexpected failure; the details are only in the log.',
  },
  ERR_CONFIG_INVALID: {
    status: 500,
    surfaces: ['start'],
    description: 'The configuration is invalid; the process lists every problem and exits 1.',
  },
  ERR_PORT_IN_USE: {
    status: 500,
    surfaces: ['start'],
    description:
      "The web listener's address (AIRLOCK_HOST:AIRLOCK_PORT) is in use or not allowed: `serve` and `demo` stop before starting anything.",
  },
  ERR_CRYPTO_FORMAT: { status: 500, surfaces: ['start'], description: 'A stored ciphertext is not in the v1 format.' },
  ERR_CRYPTO_DECRYPT: {
    status: 500,
    surfaces: ['start'],
    description: 'A stored secret cannot be decrypted (wrong encryption key or tampered data).',
  },
  ERR_DB_MIGRATION: {
    status: 500,
    surfaces: ['start'],
    description:
      'A database migration file is broken (no SQL for an engine, or two with one number), or the database has a newer schema than this program.',
  },
  ERR_DB_UNAVAILABLE: {
    status: 503,
    surfaces: ['http', 'start', 'control'],
    description:
      'The database cannot be reached (answered with Retry-After; at start the process names host and database and exits 1).',
  },
  ERR_STARTING: {
    status: 503,
    surfaces: ['http'],
    description:
      'The daemon is starting: its port is bound, its sandbox runtime and web app not ready yet (answered with Retry-After: 1).',
  },
  ERR_DB_URL: {
    status: 500,
    surfaces: ['start'],
    description: 'AIRLOCK_DATABASE_URL is not a postgres:// or postgresql:// URL.',
  },
  ERR_CLI_USAGE: {
    status: 400,
    surfaces: ['control'],
    description: 'The `airlock` CLI or the control API got an unknown command or a bad argument.',
  },
  ERR_HTTP: {
    status: 502,
    surfaces: ['ui'],
    description: 'Browser UI: the server answered an error without a JSON error body.',
  },
  ERR_NETWORK: { status: 503, surfaces: ['ui'], description: 'Browser UI: the server could not be reached.' },
} as const satisfies ErrorArea;
