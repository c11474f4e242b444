import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import * as chat from '../../domain/chat/store.js';
import { createOrganisation, createTeam, editTeamMember, setMember } from '../../domain/identity/orgs.js';
import { queryActionLog } from '../../domain/action-log.js';
import { addUser, startTestApp, type TestApp } from '../helpers/app.js';
import { TEST_ENGINE } from '../helpers/db.js';
import type { Client } from '../helpers/client.js';
import type { TurnRunner } from '../../core/index.js';

/**
 * Read-only links to a chat over HTTP (web/share-routes.ts), on this pass's engine: the owner
 * makes, sees and revokes a link; a signed-in user of the owner's organisation reads it (the
 * branch as it was, charts and files it names only); anyone else, a revoked or made-up link,
 * and every write through a link answer 404 ERR_SHARE_NOT_FOUND. The token never reaches the log.
 */

const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');

async function signIn(app: TestApp, name: string): Promise<Client> {
  const c = app.client();
  t.equal((await c.login(name, 'pw-123456789')).status, 200, `${name} signs in`);
  return c;
}

/** A finished turn with a chart tool call. */
async function turn(
  app: TestApp,
  sessionId: string,
  prompt: string,
  chart?: string,
  replaces?: string,
): Promise<string> {
  const db = app.database.sql;
  const id = randomUUID();
  const placed = await chat.placeTurn(db, sessionId, replaces);
  await chat.startTurn(db, sessionId, id, prompt, placed.parent);
  if (chart) {
    await chat.toolStarted(db, id, 'c1', 'rasterize_chart', {});
    await chat.toolEnded(db, id, 'c1', 'rasterize_chart', true, { chart_attachment: chart }, undefined, 5);
  }
  await chat.endTurn(db, id, `answer to ${prompt}`, 'end_turn', undefined, !!chart, {
    usage: { input_tokens: 10, output_tokens: 3 },
  });
  return id;
}

t.test(`chat share links on ${TEST_ENGINE}`, async (t) => {
  // A turn runner that only counts: nothing a viewer sends may reach it.
  const ran: string[] = [];
  const runner: TurnRunner = {
    runTurn: async (req) => {
      ran.push(req.sessionId);
      return { stop_reason: 'end_turn' };
    },
  };
  const app = await startTestApp(t, { services: { chat: { runner } } });
  const db = app.database.sql;
  const [ann, ben, cid, dan] = await Promise.all(
    ['ann', 'ben', 'cid', 'dan', 'eve'].map((n) => addUser(app.database, n, 'pw-123456789')),
  );
  // ann and ben: organisation Acme (ben through a team); cid: organisation Other; dan and eve: none.
  const acme = await createOrganisation(db, 'Acme');
  const other = await createOrganisation(db, 'Other');
  await setMember(db, acme.id, ann.id, 'member');
  const team = await createTeam(db, acme.id, 'Sales', null);
  await editTeamMember(db, team.id, ben.id, true);
  await setMember(db, other.id, cid.id, 'member');

  // ann's chat: a chart and an uploaded file, then a second turn.
  const chart = `${randomUUID()}.png`;
  const ws = join(app.config.dataDir, 'workspaces', String(ann.id));
  mkdirSync(join(ws, '.agent-attachments'), { recursive: true });
  mkdirSync(join(ws, 'uploads'), { recursive: true });
  writeFileSync(join(ws, '.agent-attachments', chart), PNG);
  writeFileSync(join(ws, 'uploads', 'sales.csv'), 'week,total\n1,10\n');
  writeFileSync(join(ws, 'uploads', 'private.csv'), 'not,shared\n');
  const s = await chat.createSession(db, ann.id, 'Sales chart');
  const t1 = await turn(app, s.id, 'chart the sales\n\nAttached: uploads/sales.csv', chart);
  const t2 = await turn(app, s.id, 'thanks');

  const annC = await signIn(app, 'ann');
  const base = `/api/chat/sessions/${s.id}/share`;
  t.same((await annC.json('GET', base)).body, { shared: false, created_at: null }, 'not shared yet');
  const made = await annC.json('POST', base);
  t.equal(made.status, 201);
  t.match(made.body, { shared: true, token: /^[A-Za-z0-9_-]{43}$/, url: new RegExp(`/#/share/${made.body.token}$`) });
  const token = made.body.token as string;
  t.match(
    (await annC.json('GET', base)).body,
    { shared: true, created_at: made.body.created_at },
    'the owner sees it is shared',
  );
  const stored = await db.selectFrom('chat_shares').selectAll().execute();
  t.equal(stored.length, 1);
  t.not(stored[0].token_hash, token, 'only the hash is stored');
  t.notOk(JSON.stringify(stored).includes(token), 'the token is nowhere in the row');

  // After sharing, ann goes on: the link still shows the branch as it was.
  await turn(app, s.id, 'a later secret question');
  await turn(app, s.id, 'thanks, edited', undefined, t2);

  const benC = await signIn(app, 'ben');
  const view = await benC.json('GET', `/api/share/${token}`);
  t.equal(view.status, 200, 'a user of the same organisation (through a team) opens it');
  t.match(view.body, { title: 'Sales chart', owner: 'ann', usage: { input_tokens: 20, output_tokens: 6 } });
  t.same(
    view.body.turns.map((x: any) => x.turn_id),
    [t1, t2],
    'the branch shown when the link was made; later turns and edits are not',
  );
  t.same(view.body.turns[1].siblings, [t2], 'other versions are not named');
  const img = await benC.request('GET', `/api/share/${token}/attachments/${chart}`);
  t.equal(img.status, 200);
  t.equal(img.headers.get('content-type'), 'image/png');
  t.same(Buffer.from(await img.arrayBuffer()), PNG, "the chart comes from the owner's workspace");
  t.match((await benC.json('GET', `/api/share/${token}/files/sales.csv/preview`)).body, {
    name: 'sales.csv',
    table: {
      rows: [
        ['week', 'total'],
        ['1', '10'],
      ],
    },
  });
  t.equal((await benC.request('GET', `/api/share/${token}/files/sales.csv`)).status, 200);
  for (const path of [`/attachments/${randomUUID()}.png`, '/files/private.csv', '/files/private.csv/preview'])
    t.match(
      await benC.json('GET', `/api/share/${token}${path}`),
      { status: 404, body: { error: { code: 'ERR_SHARE_NOT_FOUND' } } },
      `${path}: only what the shared turns name`,
    );
  t.equal(
    (await benC.json('GET', `/api/chat/attachments/${chart}`)).status,
    404,
    "the viewer's own attachment route does not reach the owner's workspace",
  );

  // No write through a share: no method but GET, and the chat's own routes stay the owner's.
  for (const [m, path, body] of [
    ['POST', `/api/share/${token}`, {}],
    ['PUT', `/api/share/${token}/turns/${t1}/feedback`, { rating: 'up' }],
    ['DELETE', `/api/share/${token}`, undefined],
    ['POST', `/api/share/${token}/messages`, { message: 'hi' }],
  ] as const)
    t.match(
      await benC.json(m, path, body),
      { status: 404, body: { error: { code: 'ERR_SHARE_NOT_FOUND' } } },
      `${m} ${path.replace(token, ':token')}: 404`,
    );
  t.equal(
    (await benC.json('POST', '/api/chat/messages', { message: 'hi', session_id: s.id })).status,
    404,
    'the viewer cannot send into the chat',
  );
  t.same(ran, [], 'no turn ran');
  t.equal(
    (await benC.json('POST', `/api/chat/sessions/${s.id}/branch`, { turn_id: t1 })).status,
    404,
    'nor switch its branch',
  );
  t.equal(
    (await benC.json('PUT', `/api/chat/sessions/${s.id}/turns/${t1}/feedback`, { rating: 'down' })).status,
    404,
    'nor rate its answers',
  );
  t.equal((await benC.json('DELETE', base)).status, 404, 'nor revoke the link');
  t.equal((await benC.json('POST', base)).status, 404, 'nor make one');
  t.equal(
    (await benC.json('GET', `/api/chat/sessions/${s.id}/messages`)).status,
    404,
    'nor read the chat beyond the link',
  );

  // Anyone else: another organisation, no organisation, a made-up link: the same 404.
  const cidC = await signIn(app, 'cid');
  const danC = await signIn(app, 'dan');
  const notFound = { status: 404, body: { error: { code: 'ERR_SHARE_NOT_FOUND' } } };
  t.match(await cidC.json('GET', `/api/share/${token}`), notFound, 'another organisation: 404, not 403');
  t.match(await cidC.json('GET', `/api/share/${token}/attachments/${chart}`), notFound);
  t.match(await danC.json('GET', `/api/share/${token}`), notFound, 'no organisation: 404');
  t.match(await benC.json('GET', `/api/share/${'x'.repeat(43)}`), notFound, 'a made-up link: the same 404');
  t.match(await benC.json('GET', '/api/share/short'), notFound);
  t.equal(
    (await app.client().json('GET', `/api/share/${token}`)).status,
    401,
    'signed out: sign in first (the same for every link)',
  );

  // Users of no organisation share with each other (a server without organisations is one).
  const d = await chat.createSession(db, dan.id, 'Dan notes');
  await turn(app, d.id, 'note');
  const danToken = (await danC.json('POST', `/api/chat/sessions/${d.id}/share`)).body.token as string;
  const eveC = await signIn(app, 'eve');
  t.equal((await eveC.json('GET', `/api/share/${danToken}`)).status, 200, 'no organisation to no organisation: opens');
  t.match(
    await benC.json('GET', `/api/share/${danToken}`),
    notFound,
    "an organisation member does not open an org-less user's link",
  );

  // A new link replaces the old; revoking ends it; both are audited.
  const again = (await annC.json('POST', base)).body.token as string;
  t.match(await benC.json('GET', `/api/share/${token}`), notFound, 'the old link stops when a new one is made');
  t.equal((await benC.json('GET', `/api/share/${again}`)).status, 200);
  t.equal((await annC.request('DELETE', base)).status, 204);
  t.match(await benC.json('GET', `/api/share/${again}`), notFound, 'revoked: 404');
  t.match(await benC.json('GET', `/api/share/${again}/attachments/${chart}`), notFound);
  t.same((await annC.json('GET', base)).body, { shared: false, created_at: null });
  t.equal((await annC.request('DELETE', base)).status, 204, 'revoking again is no error');
  const events = (await queryActionLog(db, { limit: 50 }))
    .filter((e) => e.event.startsWith('chat.share'))
    .map((e) => [e.event, e.actor_id, e.data.session_id]);
  t.same(
    events.filter((e) => e[2] === s.id).reverse(),
    [
      ['chat.shared', ann.id, s.id],
      ['chat.shared', ann.id, s.id],
      ['chat.share_revoked', ann.id, s.id],
    ],
    'made, made again, revoked: each in the action log (once)',
  );

  // Deleting the chat deletes its links.
  await danC.request('DELETE', `/api/chat/sessions/${d.id}`);
  t.match(await eveC.json('GET', `/api/share/${danToken}`), notFound, 'the chat is gone: 404');
  t.equal((await db.selectFrom('chat_shares').selectAll().where('session_id', '=', d.id).execute()).length, 0);

  // The token is a secret: the request log names the route, never the token.
  t.notOk(app.logs.text().includes(token), 'no share token in the log');
  t.ok(app.logs.text().includes('/api/share/:token'), 'the log has the route');
});
