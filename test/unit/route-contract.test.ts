/**
 * The route contract check (web/contract.ts): which definition answered a request, and what it
 * finds wrong with an answer. Every test that calls a route runs it (the test runner sets
 * AIRLOCK_CONTRACT_LOG); here its judgements are shown on answers made up for the purpose.
 */
import t from 'tap';
import { z } from 'zod';
import { contractProblem, definitionOf } from '../../web/contract.js';
import { commonErrors, routeErrors, type RouteDef } from '../../web/routes/define.js';
import { ROUTES } from '../../web/routes/index.js';

const def = (over: Partial<RouteDef>): RouteDef => ({
  method: 'get',
  path: '/api/x/{id}',
  tag: 't',
  who: 'superuser',
  summary: 's',
  ...over,
});

t.test('the definition that answered: by method and path, the more literal one on a tie', async (t) => {
  t.equal(definitionOf('GET', '/api/data-authorization/roles')?.path, '/api/data-authorization/roles');
  t.equal(definitionOf('DELETE', '/api/data-authorization/roles/7')?.path, '/api/data-authorization/roles/{role_id}');
  t.equal(definitionOf('PUT', '/api/data-authorization/roles'), undefined, 'no PUT there');
  t.equal(definitionOf('GET', '/api/nothing/here'), undefined);
  t.equal(definitionOf('GET', '/api/admin/usage.csv')?.path, '/api/admin/usage.csv', 'a dot is a dot');
});

t.test('a success answer against the response schema and status', async (t) => {
  const d = def({ response: z.strictObject({ id: z.number(), name: z.string() }) });
  t.equal(contractProblem(d, 200, { id: 1, name: 'a' }), null, 'matches');
  t.match(contractProblem(d, 200, { id: 1, name: 'a', password_hash: 'x' }), /password_hash/, 'a stray field');
  t.match(contractProblem(d, 200, { id: '1', name: 'a' }), /id:/, 'a wrong type names the field');
  t.match(contractProblem(d, 201, { id: 1, name: 'a' }), /answers 201, its definition says 200/);
  t.equal(contractProblem(def({ response: d.response!, status: [200, 201] }), 201, { id: 1, name: 'a' }), null);
  t.match(contractProblem(def({}), 200, { ok: true }), /no response schema/, 'JSON on a route without one');
  t.equal(contractProblem(def({}), 302, {}), null, 'not a success or an error: not judged');
});

t.test('an error answer against the codes the route may give', async (t) => {
  const d = def({ errors: ['ERR_DATA_ROLE_NOT_FOUND'] });
  const body = (code: string) => ({ error: { code, message: 'm' } });
  t.equal(contractProblem(d, 404, body('ERR_DATA_ROLE_NOT_FOUND')), null, 'its own code');
  t.equal(contractProblem(d, 403, body('ERR_AUTH_FORBIDDEN')), null, 'a superuser route may refuse others');
  t.equal(contractProblem(d, 500, body('ERR_INTERNAL')), null, 'any route may fail');
  t.match(contractProblem(d, 409, body('ERR_DATA_ROLE_EXISTS')), /ERR_DATA_ROLE_EXISTS.*does not list/);
  t.match(contractProblem(d, 400, { message: 'x' }), /without error\.code/);
  t.notOk(commonErrors('anyone').includes('ERR_AUTH_REQUIRED'), 'an open route gives no sign-in code');
  t.ok(routeErrors(def({ who: 'agent' })).has('ERR_AGENT_TOKEN_INVALID'), 'the agent route its token codes');
});

t.test('every definition says what a success answers: a schema, no content, or what it is instead', async (t) => {
  const silent = ROUTES.filter((d) => !d.response && !d.answer && ![d.status ?? 200].flat().includes(204));
  t.same(
    silent.map((d) => `${d.method} ${d.path}`),
    [],
    'give it `response` (JSON), `status: 204`, or `answer` (a file, a stream, a redirect)',
  );
  t.ok(ROUTES.filter((d) => d.response).length > 90, 'most routes answer JSON with a schema');
});
