/** GET /api/chat/model: the chat page names the model that answers, the offline demo one as such. */
import t from 'tap';
import { addUser, startTestApp } from '../helpers/app.js';

const cases: Array<[string, Record<string, string>, unknown]> = [
  ['the default demo model', {}, { provider: 'demo', model: 'demo', demo: true }],
  ['an OpenAI-compatible model', { AIRLOCK_MODEL_PROVIDER: 'openai', AIRLOCK_MODEL: 'gpt-test-1', AIRLOCK_MODEL_BASE_URL: 'http://127.0.0.1:9/v1', AIRLOCK_MODEL_API_KEY: 'sk-never-shown-0123456789' }, { provider: 'openai', model: 'gpt-test-1', demo: false }],
];

for (const [name, env, want] of cases) {
  t.test(name, async (t) => {
    const app = await startTestApp(t, { env });
    t.equal((await app.client().json('GET', '/api/chat/model')).status, 401, 'signed-in users only');
    await addUser(app.db, 'mo', 'mo-password-123');
    const c = app.client();
    t.equal((await c.login('mo', 'mo-password-123')).status, 200);
    const r = await c.json('GET', '/api/chat/model');
    t.equal(r.status, 200);
    t.same(r.body, want);
    t.notOk(JSON.stringify(r.body).includes('sk-never-shown'), 'no key in the answer');
  });
}
