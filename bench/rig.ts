/** Pieces several benchmarks set up alike: a container started until it prints `ready`, an owner's leftovers removed, the Google routes over one fake upstream, a 1 MiB mail. */
import type Docker from 'dockerode';
import MailComposer from 'nodemailer/lib/mail-composer';
import type { ProfileRoute } from '../core/sandbox-protocol.js';
import { buildRoutes } from '../daemon/host/overlay.js';

/** Attach to the created container, start it and resolve once its output says `ready`. */
export async function startUntilReady(c: Docker.Container): Promise<void> {
  const stream = await c.attach({ stream: true, stdout: true, stderr: true });
  const ready = new Promise<void>((resolve) => {
    let buf = '';
    stream.on('data', (d: Buffer) => {
      buf += d.toString();
      if (buf.includes('ready')) resolve();
    });
  });
  await c.start();
  await ready;
}

/** Remove every container of this owner label, whatever its state (test/docker/helpers.ts). */
export { sweep as removeOwned } from '../test/docker/helpers.js';

/** The mail, sheets and search routes of a session, all to one fake upstream (no model, no host route). */
export function googleRoutesTo(upstreamUrl: string): ProfileRoute[] {
  return buildRoutes({
    google: { mailBaseUrl: upstreamUrl, sheetsBaseUrl: upstreamUrl, driveBaseUrl: upstreamUrl },
    model: { provider: 'demo' },
    hasAccountToken: true,
    hasModelKey: false,
  });
}

/** A Gmail send body `{"raw":…}` of about 1 MiB: three recipients and a 760 KiB attachment. */
export async function megabyteMailBody(): Promise<{ body: string; rawBytes: number }> {
  const raw = await new MailComposer({
    from: 'me@corp.example',
    to: ['ann@corp.example', 'bob@corp.example'],
    cc: 'carol@eu.corp.example',
    subject: 'Quarterly chart',
    text: 'See the chart.',
    attachments: [{ filename: 'chart.png', content: Buffer.alloc(760 * 1024, 0x5a) }],
  })
    .compile()
    .build();
  return { body: JSON.stringify({ raw: raw.toString('base64url') }), rawBytes: raw.length };
}
