import t from 'tap';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { repoRoot } from '../helpers/source-tree.js';

/**
 * The walks of docs/architecture.md "Rooms" (lint/journeys.js, `npm run journeys`): a mail from
 * send_email to the mailbox, a chat turn and a token rotation cross no room twice, and every step
 * and link is written in the tree. The planted walks show each check fires.
 */
const root = repoRoot();
type Step = { file: string; fn: string; does: string; via?: string; wire?: string };
type Journey = { name: string; chains: { name: string; steps: Step[] }[] };
const { JOURNEYS, checkJourneys, describeJourneys, roomOf } = (await import(
  pathToFileURL(join(root, 'lint', 'journeys.js')).href
)) as {
  JOURNEYS: Journey[];
  checkJourneys(j: Journey[], root: string): string[];
  describeJourneys(j: Journey[]): string;
  roomOf(file: string): string;
};

t.test('the three walks of the tree hold', async (t) => {
  t.same(checkJourneys(JOURNEYS, root), []);
  t.same(
    JOURNEYS.map((j) => j.name),
    ['A mail, from send_email to the mailbox', 'A chat turn', 'A token rotation'],
  );
  const text = describeJourneys(JOURNEYS);
  t.match(
    text,
    /the send is held and decided on the host: tools → proxy → daemon\/host → daemon\/runtime → domain\/mail/,
  );
  t.match(text, /a due token is refreshed and replaced: daemon\/host\n/, 'a rotation stays among the host services');
});

t.test('rooms: a top folder, or one folder under domain/ and daemon/', async (t) => {
  t.equal(roomOf('domain/mail/gate.ts'), 'domain/mail');
  t.equal(roomOf('domain/accounts.ts'), 'domain');
  t.equal(roomOf('daemon/host/tokens.ts'), 'daemon/host');
  t.equal(roomOf('daemon/serve.ts'), 'daemon');
  t.equal(roomOf('web/identity/routes.ts'), 'web');
});

t.test('each check fires on a planted walk', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-journeys-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const plant = (file: string, text: string) => {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  };
  // The rotation as it was: the token service called back through the wiring into the runtime,
  // which put the tokens into the gateway, a host service again.
  plant('daemon/host/tokens.ts', 'export class T {\n  pushToUser() {\n    this.rotate();\n  }\n}\n');
  plant(
    'daemon/serve.ts',
    'function wireRuntime() {\n  const rotate = (s, k) => runtime.sessions.rotateTokens(s, k);\n  tokens.setRotate(rotate);\n}\n',
  );
  plant(
    'daemon/runtime/session-ops.ts',
    'class O {\n  async rotateTokens(id, k) {\n    this.table.get(id).egress.setTokens(k);\n  }\n}\n',
  );
  plant('daemon/host/egress.ts', 'const h = {\n  setTokens: (k) => undefined,\n};\n');
  const chain = (steps: Step[]): Journey[] => [{ name: 'planted', chains: [{ name: 'chain', steps }] }];
  const rotation = chain([
    { file: 'daemon/host/tokens.ts', fn: 'pushToUser', does: '' },
    { file: 'daemon/serve.ts', fn: 'wireRuntime', via: 'rotate', does: '' },
    { file: 'daemon/runtime/session-ops.ts', fn: 'rotateTokens', does: '' },
    { file: 'daemon/host/egress.ts', fn: 'setTokens', does: '' },
  ]);
  t.match(checkJourneys(rotation, dir), [
    /step 4 \(daemon\/host\/egress.ts\) enters daemon\/host\/ a second time \(daemon\/host → daemon → daemon\/runtime → daemon\/host\)/,
  ]);

  t.match(checkJourneys(chain([{ file: 'daemon/host/tokens.ts', fn: 'refresh', does: '' }]), dir), [
    /tokens.ts defines no refresh/,
  ]);
  t.match(checkJourneys(chain([{ file: 'daemon/host/gone.ts', fn: 'x', does: '' }]), dir), [/gone.ts does not exist/]);
  // A link neither end spells: setTokens is defined, but tokens.ts never calls it by that name.
  t.match(
    checkJourneys(
      chain([
        { file: 'daemon/host/tokens.ts', fn: 'pushToUser', does: '' },
        { file: 'daemon/host/egress.ts', fn: 'setTokens', does: '' },
      ]),
      dir,
    ),
    [/tokens.ts never names setTokens, the link to daemon\/host\/egress.ts/],
  );
  // A wire word one end does not spell.
  t.match(
    checkJourneys(
      chain([
        { file: 'daemon/serve.ts', fn: 'wireRuntime', does: '' },
        { file: 'daemon/host/egress.ts', fn: 'setTokens', wire: 'rotateTokens', does: '' },
      ]),
      dir,
    ),
    [/egress.ts never names rotateTokens, the link from daemon\/serve.ts/],
  );
});
