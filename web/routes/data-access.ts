/** Data-access control: roles, table policies, assignments, the audit (docs/data-access.md). One definition per route: docs/architecture.md, "Routes defined once". */
import { ASSIGN_SCHEMA, POLICY_PUT_SCHEMA, ROLE_CREATE_SCHEMA, ROLE_PATCH_SCHEMA } from '../data-access/routes.js';
import { area, type RouteDef } from './define.js';

export const DATA_ACCESS_ROUTES: readonly RouteDef[] = [
  ...area('data-access', [
    { method: 'get', path: '/api/data-authorization/roles', who: 'superuser', summary: 'Roles' },
    {
      method: 'post',
      path: '/api/data-authorization/roles',
      who: 'superuser',
      summary: 'Create a role',
      body: ROLE_CREATE_SCHEMA,
    },
    {
      method: 'patch',
      path: '/api/data-authorization/roles/{role_id}',
      who: 'superuser',
      summary: 'Update a role',
      body: ROLE_PATCH_SCHEMA,
    },
    { method: 'delete', path: '/api/data-authorization/roles/{role_id}', who: 'superuser', summary: 'Delete a role' },
    {
      method: 'get',
      path: '/api/data-authorization/roles/{role_id}/policies',
      who: 'superuser',
      summary: 'Table grants of a role',
    },
    {
      method: 'put',
      path: '/api/data-authorization/roles/{role_id}/policies/{table_name}',
      who: 'superuser',
      summary: 'Create or replace a table grant',
      body: POLICY_PUT_SCHEMA,
    },
    {
      method: 'delete',
      path: '/api/data-authorization/roles/{role_id}/policies/{table_name}',
      who: 'superuser',
      summary: 'Delete a table grant',
    },
    { method: 'get', path: '/api/data-authorization/assignments', who: 'superuser', summary: 'Role assignments' },
    {
      method: 'post',
      path: '/api/data-authorization/assignments',
      who: 'superuser',
      summary: 'Assign a role {user_id, role_id}',
      body: ASSIGN_SCHEMA,
    },
    {
      method: 'delete',
      path: '/api/data-authorization/assignments/{assignment_id}',
      who: 'superuser',
      summary: 'Remove an assignment',
    },
    {
      method: 'get',
      path: '/api/data-authorization/users/{user_id}/effective-policy',
      who: 'superuser',
      summary: 'Effective data policy of a user',
    },
    { method: 'get', path: '/api/data-authorization/audit', who: 'superuser', summary: 'The action log, newest first' },
  ]),
  ...area('internal', [
    {
      method: 'get',
      path: '/api/internal/bi-policy/{user_id}',
      who: 'internal',
      summary: 'Effective and compiled data policy for the BI tool',
    },
    {
      method: 'post',
      path: '/api/internal/bi-audit',
      who: 'internal',
      summary: 'Record a BI allow/deny decision (known fields only)',
    },
  ]),
];
