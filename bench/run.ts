import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { report, type BenchResult } from './lib.js';

/** Run every bench/*.bench.js (or those named on the command line) one after another. */
const here = dirname(fileURLToPath(import.meta.url));
const only = process.argv.slice(2);
const files = readdirSync(here)
  .filter((f) => f.endsWith('.bench.js'))
  .filter((f) => only.length === 0 || only.some((o) => f.startsWith(o)))
  .sort();
let failed = 0;
for (const f of files) {
  const mod = (await import(pathToFileURL(join(here, f)).href)) as {
    run(): Promise<BenchResult | { skipped: string }>;
  };
  try {
    const r = await mod.run();
    if ('skipped' in r) process.stdout.write(`\n## ${f}: skipped: ${r.skipped}\n`);
    else report(r);
  } catch (err) {
    failed++;
    process.stderr.write(`\n## ${f} failed: ${(err as Error).stack}\n`);
  }
}
process.exit(failed ? 1 : 0);
