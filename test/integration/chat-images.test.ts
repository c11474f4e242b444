/**
 * Images through the chat (docs/chat.md "Images"): with the default model marked as taking image
 * input (AIRLOCK_MODEL_IMAGES=true, written into its chat_models entry), a message whose Attached
 * line names a PNG upload reaches the model with the image as an image_url part, through the web
 * app, the local runner and a real agent child (AGENT_MODEL_IMAGES from the entry). An admin turns
 * it off (PATCH /api/admin/chat-models/default {images: false}): the chat's next turn runs in a new
 * child and the same message goes as text only. Runs on SQLite and PostgreSQL.
 */
import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startChatHarness, streamTurn } from '../helpers/chat.js';
import { addUser, tempDir } from '../helpers/app.js';
import { TEST_ENGINE } from '../helpers/db.js';
import { PNG_1PX } from '../helpers/xlsx.js';

const MESSAGE = 'What is in the picture?\n\nAttached: uploads/photo.png';

t.test(`a PNG upload reaches a model that takes images; an admin turns it off (${TEST_ENGINE})`, async (t) => {
  const work = tempDir(t, 'airlock-chat-images-');
  mkdirSync(join(work, 'uploads'));
  writeFileSync(join(work, 'uploads', 'photo.png'), PNG_1PX);
  const h = await startChatHarness(t, {
    chatModels: true,
    childEnv: { AGENT_ATTACHMENTS_DIR: join(work, '.agent-attachments') },
    app: { env: { AIRLOCK_MODEL_IMAGES: 'true' } },
  });
  await addUser(h.app.database, 'root', 'root-password', { superuser: true });
  const root = h.app.client();
  t.equal((await root.login('root', 'root-password')).status, 200);
  const listed = await root.json('GET', '/api/admin/chat-models');
  t.match(
    listed.body.models[0],
    { id: 'default', images: true },
    'the default entry says it takes images (from AIRLOCK_MODEL_IMAGES)',
  );

  const c = await h.login('alice');
  h.model.push({ kind: 'reply', text: 'A single dot.' });
  const r1 = await streamTurn(c, { message: MESSAGE });
  t.match(r1.events.at(-1), { type: 'done', stop_reason: 'end_turn' }, 'the turn ends as usual');
  const user1 = h.model.requests[0].body.messages.find((m: any) => m.role === 'user');
  t.same(user1.content, [
    { type: 'text', text: MESSAGE },
    { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_1PX.toString('base64')}` } },
  ]);

  const off = await root.json('PATCH', '/api/admin/chat-models/default', { images: false });
  t.same([off.status, off.body.images], [200, false]);
  h.model.push({ kind: 'reply', text: 'I cannot see images.' });
  const r2 = await streamTurn(c, { message: MESSAGE, session_id: r1.sessionId });
  t.match(r2.events.at(-1), { type: 'done', stop_reason: 'end_turn' });
  const users2 = h.model.requests[1].body.messages.filter((m: any) => m.role === 'user');
  t.same(
    users2.map((m: any) => m.content),
    [MESSAGE, MESSAGE],
    'text only, the earlier message too',
  );
  const bad = await root.json('PATCH', '/api/admin/chat-models/default', { images: 'yes' });
  t.same([bad.status, bad.body.error.code], [400, 'ERR_VALIDATION']);
});
