/**
 * Credential injection on the host (docs/security.md, "root in the container"): a live sandbox
 * holds no real token anywhere. As root inside it, a scan of every process's memory (the resident
 * pages of every readable region of /proc/<pid>/mem: reading untouched pages would fault them in
 * and OOM-kill the sandbox), environ and cmdline, and of every file under / (but /proc, /sys,
 * /dev) finds no token, after the token was used; a `docker commit` of the live sandbox, exported,
 * holds none either. The scan's control: a canary planted in a root process's environment, and
 * one planted only in a root process's heap, are found.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { createLogger } from '../../core/index.js';
import type { PreparedSession, SessionPreparer } from '../../core/sandbox-protocol.js';
import { EgressGatewayService } from '../../daemon/host/egress.js';
import { buildRoutes } from '../../daemon/host/overlay.js';
import { start as startUpstream } from '../../emulator/fake-upstream.js';
import { Scrubber } from '../../proxy/index.js';
import { dockerOrSkip, ensureTestImage, execIn, plantAndScan, SECRET_SCAN } from './helpers.js';
import { manager, turn } from './sandbox-kit.js';

const docker = await dockerOrSkip(t as unknown as Parameters<typeof dockerOrSkip>[0]);
const log = createLogger({ level: 'warn', destination: process.stderr });

/** Count a needle in a byte stream, across chunk boundaries (the scrubber's streaming search). */
async function countIn(stream: Readable, needle: string): Promise<{ hits: number; bytes: number }> {
  const s = new Scrubber(needle);
  let bytes = 0;
  for await (const chunk of stream) {
    bytes += (chunk as Buffer).length;
    s.push(chunk as Buffer);
  }
  return { hits: s.hits, bytes };
}

if (docker) {
  const image = await ensureTestImage(docker);

  t.test('root in a live sandbox finds no real token: memory, environ, files, docker commit', async (t) => {
    const upstream = await startUpstream();
    t.teardown(() => upstream.close());
    const CANARY = `ya29.canary-${randomBytes(16).toString('hex')}`;
    const routes = buildRoutes({
      google: { mailBaseUrl: upstream.url, sheetsBaseUrl: upstream.url, driveBaseUrl: upstream.url },
      model: { provider: 'demo' },
      hasAccountToken: true,
      hasModelKey: false,
    });
    const preparer: SessionPreparer = {
      async prepare(): Promise<PreparedSession> {
        const placeholders = Object.fromEntries(
          routes.map((r) => [r.placeholder_env, `ph-${r.name}-${randomBytes(8).toString('hex')}`]),
        );
        return {
          routes,
          tokens: { MAIL_ACCESS_TOKEN: CANARY, SHEETS_ACCESS_TOKEN: CANARY, SEARCH_ACCESS_TOKEN: CANARY },
          placeholders,
          agentEnv: { AIRLOCK_MODEL_PROVIDER: 'demo' },
          egressAllow: [],
        };
      },
    };
    const egress = new EgressGatewayService({ log, extraRequestHeaders: ['x-test-echo'] });
    t.teardown(() => egress.close());
    for (const pool of ['1', '0']) {
      const { m } = await manager(t, docker, image, { AIRLOCK_POOL_SIZE: pool }, { preparer, egress });
      await m.poolReady();
      const sid = `inject-${pool}`;
      const r = await turn(m, sid, 'hi');
      t.equal(r.stop_reason, 'end_turn');
      const id = r.containerId!;
      // The token is used (and echoed back by the upstream, scrubbed by the gateway) before the scan.
      const use = await execIn(
        docker,
        id,
        [
          '/usr/local/bin/node',
          '-e',
          `const s = require('net').connect('/run/airlock/egress.sock'); let b = ''; s.on('data', (d) => (b += d)); s.on('close', () => process.stdout.write(b)); s.write('GET /sheets/v4/spreadsheets/s1/values/A1 HTTP/1.1\\r\\nHost: x\\r\\nx-test-echo: 1\\r\\nConnection: close\\r\\n\\r\\n');`,
        ],
        { user: '0' },
      );
      t.match(use.stdout, /^HTTP\/1\.1 200 /, 'a request through the gateway');
      t.equal(
        upstream.requests.at(-1)?.headers.authorization,
        `Bearer ${CANARY}`,
        'the upstream got the real token, injected on the host',
      );
      t.notMatch(use.stdout, new RegExp(CANARY), 'its echo came back scrubbed');

      const needle = [`NEEDLE_HEX=${Buffer.from(CANARY).toString('hex')}`];
      const scan = await execIn(docker, id, ['/usr/local/bin/node', '-e', SECRET_SCAN], {
        user: '0',
        env: [...needle, 'SCAN_ROOT=/', 'SCAN_ALL=1'],
      });
      const s = JSON.parse(scan.stdout) as { hits: string[]; checked: Record<string, number> };
      t.same(s.hits, [], `no real token anywhere root can look (pool=${pool}): ${JSON.stringify(s.checked)}`);
      // Root here has no CAP_SYS_PTRACE: the agent child's memory (uid 1001) is closed to it; the
      // supervisor's (root), where the token used to live, and docker-init's are read.
      t.ok(
        s.checked.mem >= 2 && s.checked.environ >= 2 && s.checked.files > 1000,
        "the scan read the root processes' memory and environ and the whole file system",
      );

      // Control: the same scan, as root, finds a canary planted in a root process's environment,
      // and one planted only in a root process's heap (the memory read is not silently empty).
      const planted = await plantAndScan(docker, id, '0', CANARY, ['SCAN_ALL=1']);
      t.ok(
        planted.hits.some((h) => h.endsWith('/environ')),
        'control: a canary planted in an environment is found',
      );
      t.ok(
        planted.hits.includes(`${planted.plantPid}/mem`),
        `control: a canary planted in a heap is found in resident memory (${planted.hits.join(', ')})`,
      );

      // A checkpoint of the live sandbox: docker commit, exported, holds no token.
      const committed = await docker
        .getContainer(id)
        .commit({ repo: 'airlock-test-commit', tag: `${pool}-${randomBytes(4).toString('hex')}` });
      const imageId = (committed as { Id: string }).Id;
      t.teardown(() =>
        docker
          .getImage(imageId)
          .remove({ force: true })
          .catch(() => undefined),
      );
      const c = await docker.createContainer({ Image: imageId, Entrypoint: ['/bin/true'], Labels: {} });
      t.teardown(() => c.remove({ force: true }).catch(() => undefined));
      const exported = await countIn((await c.export()) as unknown as Readable, CANARY);
      t.ok(exported.bytes > 10_000_000, `the committed image's file system was read (${exported.bytes} bytes)`);
      t.equal(exported.hits, 0, 'docker commit of a live sandbox holds no token');
    }
  });
}
