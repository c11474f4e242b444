import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import type session from 'express-session';
import { openDatabase } from '../../domain/db/index.js';
import { createUser } from '../../domain/users.js';
import { DbSessionStore, TOUCH_EVERY_MS } from '../../web/session-store.js';

const call = (fn: (cb: (err?: unknown) => void) => void) =>
  new Promise<void>((resolve, reject) => fn((err) => (err ? reject(err) : resolve())));

t.test('a rolling session: its expiry is written once it moved a minute, not at every request', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-session-store-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const database = await openDatabase({ file: join(dir, 'airlock.db') });
  t.teardown(() => database.close());
  const db = database.sql;
  const stored = async (sid: string) =>
    Number(
      (await db.selectFrom('web_sessions').select('expires_at').where('sid', '=', sid).executeTakeFirstOrThrow())
        .expires_at,
    );
  const sess = (expires: number) =>
    ({
      cookie: { expires: new Date(expires), originalMaxAge: 7 * 24 * 3600 * 1000 },
      userId: 1,
    }) as unknown as session.SessionData;
  await createUser(db, { username: 'ann', email: 'ann@example.test', passwordHash: 'x' });

  const store = new DbSessionStore(db);
  const t0 = Date.now() + 7 * 24 * 3600 * 1000;
  await call((cb) => store.set('s1', sess(t0), cb));
  t.equal(await stored('s1'), t0, 'set writes the expiry');

  await call((cb) => store.touch('s1', sess(t0 + TOUCH_EVERY_MS - 1), cb));
  t.equal(await stored('s1'), t0, 'a touch that moves it less than a minute writes nothing');
  await call((cb) => store.touch('s1', sess(t0 + TOUCH_EVERY_MS), cb));
  t.equal(await stored('s1'), t0 + TOUCH_EVERY_MS, 'a minute later it is written');
  await call((cb) => store.touch('s1', sess(t0 + TOUCH_EVERY_MS + 5), cb));
  t.equal(await stored('s1'), t0 + TOUCH_EVERY_MS, 'and again not until the next minute');

  // Another process (a restart, another node of the fleet) has not written it: its first touch does.
  const other = new DbSessionStore(db);
  await call((cb) => other.touch('s1', sess(t0 + TOUCH_EVERY_MS + 10), cb));
  t.equal(await stored('s1'), t0 + TOUCH_EVERY_MS + 10, 'a store that did not write it writes at the first touch');

  // A destroyed session starts over: set again, it is written again.
  await call((cb) => store.destroy('s1', cb));
  await call((cb) => store.set('s1', sess(t0), cb));
  t.equal(await stored('s1'), t0, 'set after destroy writes');
});
