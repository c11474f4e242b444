import type { ErrorArea } from './types.js';

/** Data-access control: roles, table policies, row filters, assignments. */
export const DATA_ACCESS_ERRORS = {
  ERR_DATA_INVALID: {
    status: 400,
    surfaces: ['http'],
    description: 'A data-access request body or parameter is invalid (with `field` and `problems`).',
  },
  ERR_DATA_FILTER: {
    status: 400,
    surfaces: ['http'],
    description:
      'A row filter is malformed (empty group, unknown operator, empty list) or the policy allows no column.',
  },
  ERR_DATA_FILTER_TOO_LARGE: {
    status: 400,
    surfaces: ['http'],
    description: 'A row filter has more nodes than allowed.',
  },
  ERR_DATA_IDENTIFIER: {
    status: 400,
    surfaces: ['http'],
    description: 'A table or column name is not a valid identifier.',
  },
  ERR_DATA_SYSTEM_TABLE: {
    status: 400,
    surfaces: ['http'],
    description:
      'A policy may not grant a system catalogue (sqlite_*, pragma_*, pg_*, pg_catalog.*, information_schema.*).',
  },
  ERR_DATA_VALUE: {
    status: 400,
    surfaces: ['http'],
    description: 'A row-filter value is not a finite number, a string or a boolean.',
  },
  ERR_DATA_ROLE_NOT_FOUND: { status: 404, surfaces: ['http'], description: 'No such data role.' },
  ERR_DATA_ROLE_EXISTS: { status: 409, surfaces: ['http'], description: 'A data role with that name exists.' },
  ERR_DATA_ROLE_BUILTIN: {
    status: 409,
    surfaces: ['http'],
    description: 'A built-in role cannot be renamed, deleted or have its grants changed.',
  },
  ERR_DATA_POLICY_NOT_FOUND: { status: 404, surfaces: ['http'], description: 'The role has no grant on that table.' },
  ERR_DATA_ASSIGNMENT_NOT_FOUND: { status: 404, surfaces: ['http'], description: 'No such role assignment.' },
  ERR_DATA_ASSIGNMENT_EXISTS: { status: 409, surfaces: ['http'], description: 'The user already has that role.' },
  ERR_DATA_USER_NOT_FOUND: {
    status: 404,
    surfaces: ['http'],
    description: 'No such user (data-access and internal endpoints).',
  },
} as const satisfies ErrorArea;
