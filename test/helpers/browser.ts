import { existsSync, mkdirSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM = process.env.AIRLOCK_TEST_CHROMIUM ?? '/usr/bin/chromium';

/** Why browser tests cannot run here, or null. Under CI=true a missing browser is a failure, not a skip. */
export function browserUnavailable(): string | null {
  if (existsSync(CHROMIUM)) return null;
  if (process.env.CI === 'true') throw new Error(`chromium not found at ${CHROMIUM} (CI must install it)`);
  return `chromium not found at ${CHROMIUM}; apt-get install chromium`;
}

/** Launch Debian's chromium headless with the flags this closed network needs. */
export async function launch(t: { teardown(fn: () => unknown): void }): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
  t.teardown(() => browser.close());
  return browser;
}

function repoRoot(): string {
  let d = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(d, 'package.json'))) d = dirname(d);
  return d;
}

/** Save a screenshot under test-artifacts/screenshots/<name>.png and return its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  const dir = join(repoRoot(), 'test-artifacts', 'screenshots');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}
