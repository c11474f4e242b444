/**
 * A user's OAuth grant goes with its connector (migration 060, docs/connectors.md "What is
 * stored"): deleting a connector through the registry deletes every user's sealed tokens for it
 * in the same statement, and no grant can name a connector that does not exist. Runs on SQLite
 * and PostgreSQL.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Encryptor } from '../../core/index.js';
import { ConnectorService } from '../../domain/connectors/index.js';
import { createUser } from '../../domain/users.js';
import { dbRows, openTestDatabase, TEST_ENGINE } from '../helpers/db.js';

const grant = (connectorId: string, userId: number) => ({
  connector_id: connectorId,
  user_id: userId,
  client_id: 'client',
  issuer: 'https://auth.example.test',
  as_metadata: '{}',
  resource: null,
  scope: null,
  access_token_enc: 'sealed',
  access_expires_at: Date.now() + 3_600_000,
  refresh_token_enc: null,
});

t.test(`deleting a connector deletes its users' grants; a grant needs its connector (${TEST_ENGINE})`, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'conn-fk-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const db = (await openTestDatabase(t, dir)).sql;
  const ann = await createUser(db, { username: 'ann' });
  const ben = await createUser(db, { username: 'ben' });
  for (const id of ['tickets', 'wiki'])
    await db
      .insertInto('connectors')
      .values({ id, label: id, url: `https://${id}.example.test/mcp`, auth_kind: 'oauth' })
      .execute();
  await db
    .insertInto('connector_tokens')
    .values([grant('tickets', ann.id), grant('tickets', ben.id), grant('wiki', ann.id)])
    .execute();

  await new ConnectorService({ db, enc: new Encryptor(randomBytes(32)), allowHttpLoopback: false }).delete('tickets');
  const left = await dbRows<{ connector_id: string; user_id: number }>(
    db,
    'SELECT connector_id, user_id FROM connector_tokens ORDER BY connector_id',
  );
  t.same(
    left.map((r) => [r.connector_id, Number(r.user_id)]),
    [['wiki', ann.id]],
    'the deleted connector’s grants are gone, the other connector’s stay',
  );
  await t.rejects(
    db.insertInto('connector_tokens').values(grant('no-such-connector', ann.id)).execute(),
    'a grant for a connector that does not exist is refused',
  );
});
