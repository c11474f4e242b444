/** The sandbox image's package list: the production closure minus host-only packages. */
import t from 'tap';
import { join } from 'node:path';
import { realpathSync } from 'node:fs';
import { sandboxPackages } from '../../daemon/runtime/image.js';
import { repoRoot } from '../helpers/source-tree.js';

// The repository root from the sources (test/unit/) or from the build (dist/test/unit/) alike.
const ROOT = repoRoot();

t.test('sandbox packages', async (t) => {
  const pkgs = sandboxPackages(ROOT, realpathSync(join(ROOT, 'node_modules')));
  for (const p of ['@modelcontextprotocol/sdk', '@napi-rs/canvas', 'chart.js', 'zod', 'pino', 'nodemailer'])
    t.ok(pkgs.includes(`node_modules/${p}`), `${p} ships`);
  t.ok(pkgs.includes('node_modules/@napi-rs/canvas-linux-x64-gnu'), 'the canvas linux-x64-gnu binary ships');
  // express ships anyway: the MCP SDK depends on it.
  for (const p of ['node-pty', 'dockerode', 'ssh2', 'tap', 'typescript', 'oidc-provider'])
    t.notOk(pkgs.includes(`node_modules/${p}`), `${p} stays on the host`);
});
