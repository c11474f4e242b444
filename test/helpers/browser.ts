import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
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

/** Sign in on the login page at `url` as a user, and wait for the chat's prompt. */
export async function signInToChat(page: Page, url: string, username: string, password: string): Promise<void> {
  await page.goto(url + '/#/login');
  await page.fill('#username', username);
  await page.fill('#password', password);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#prompt');
}

/**
 * Save a screenshot under test-artifacts/screenshots/<name>.png and return its path: the whole
 * page by default, only the viewport with `{ fullPage: false }`.
 */
export async function screenshot(page: Page, name: string, opts: { fullPage?: boolean } = {}): Promise<string> {
  const dir = join(repoRoot(), 'test-artifacts', 'screenshots');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}.png`);
  await page.screenshot({ path: file, fullPage: opts.fullPage ?? true });
  return file;
}

/** Wait until the page has laid out and drawn two frames (resize observers, chart.js resizes). */
export async function settled(page: Page): Promise<void> {
  await page.evaluate(
    () => new Promise<void>((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve()))),
  );
}

/** How wide the page is against the viewport, and the elements that stick out to the right. */
export interface Overflow {
  scrollWidth: number;
  innerWidth: number;
  /** Up to 10 elements reaching past the viewport's right edge, as `tag#id.class (right px)`. */
  offenders: string[];
}

/** Measure horizontal overflow: the page overflows when scrollWidth > innerWidth (+1 for rounding). */
export async function horizontalOverflow(page: Page): Promise<Overflow> {
  return page.evaluate(() => {
    const vw = window.innerWidth;
    // An element inside a box that scrolls or clips sideways cannot widen the page.
    const clipped = (el: Element): boolean => {
      for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
        if (getComputedStyle(p).overflowX !== 'visible') return true;
      }
      return false;
    };
    const offenders: string[] = [];
    for (const el of Array.from(document.body.querySelectorAll('*'))) {
      const r = el.getBoundingClientRect();
      if (r.width === 0 || r.right <= vw + 1 || clipped(el)) continue;
      const id = el.id ? `#${el.id}` : '';
      const cls =
        typeof el.className === 'string' && el.className ? `.${el.className.trim().split(/\s+/).join('.')}` : '';
      offenders.push(`${el.tagName.toLowerCase()}${id}${cls} (right ${Math.round(r.right)})`);
      if (offenders.length === 10) break;
    }
    return { scrollWidth: document.documentElement.scrollWidth, innerWidth: vw, offenders };
  });
}

interface Asserts {
  ok(v: unknown, msg: string): unknown;
}

/**
 * Check the page at a phone width (390 px by default): no horizontal scrolling of the page itself
 * (wide content scrolls or wraps inside its own box), and a screenshot `<name>-<width>.png`.
 * The viewport is put back afterwards.
 */
export async function checkNarrow(t: Asserts, page: Page, name: string, width = 390): Promise<Overflow> {
  const before = page.viewportSize();
  await page.setViewportSize({ width, height: before?.height ?? 900 });
  await settled(page);
  const o = await horizontalOverflow(page);
  t.ok(
    o.scrollWidth <= o.innerWidth + 1,
    `${name}: no horizontal overflow at ${width}px (scrollWidth ${o.scrollWidth}, viewport ${o.innerWidth}${o.offenders.length ? `; sticking out: ${o.offenders.join(', ')}` : ''})`,
  );
  await screenshot(page, `${name}-${width}`);
  if (before) {
    await page.setViewportSize(before);
    await settled(page);
  }
  return o;
}

/**
 * The form controls on the page (input other than hidden, select, textarea) without an
 * accessible name from a non-empty `<label>` (for= or wrapping), `aria-label` or
 * `aria-labelledby`; each as `tag#id[name]`. A placeholder or title does not count.
 */
export async function unlabelledControls(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const text = (el: Element | null) => (el?.textContent ?? '').trim();
    const out: string[] = [];
    for (const el of Array.from(
      document.querySelectorAll<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement>('input, select, textarea'),
    )) {
      if (el instanceof HTMLInputElement && el.type === 'hidden') continue;
      const byLabel = Array.from(el.labels ?? []).some((l) => text(l) !== '');
      const byAria = (el.getAttribute('aria-label') ?? '').trim() !== '';
      const byRef = (el.getAttribute('aria-labelledby') ?? '')
        .split(/\s+/)
        .filter(Boolean)
        .some((id) => text(document.getElementById(id)) !== '');
      if (!byLabel && !byAria && !byRef)
        out.push(`${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}${el.name ? `[name=${el.name}]` : ''}`);
    }
    return out;
  });
}

/** The project's own focus ring (web/ui/public/style.css `:focus-visible`), as computed styles. */
export const FOCUS_RING = { outlineStyle: 'solid', outlineWidth: '3px', outlineColor: 'rgb(245, 158, 11)' } as const;

/** The focused element and how its focus is drawn. */
export interface FocusRing {
  tag: string;
  text: string;
  /** Whether the element matches :focus-visible (the keyboard-focus state the ring is drawn for). */
  focusVisible: boolean;
  outlineStyle: string;
  outlineWidth: string;
  outlineColor: string;
}

export async function focusRing(page: Page): Promise<FocusRing | null> {
  return page.evaluate(() => {
    const el = document.activeElement;
    if (!el || el === document.body) return null;
    const cs = getComputedStyle(el);
    return {
      tag: el.tagName.toLowerCase(),
      text: (el.textContent ?? '').trim(),
      focusVisible: el.matches(':focus-visible'),
      outlineStyle: cs.outlineStyle,
      outlineWidth: cs.outlineWidth,
      outlineColor: cs.outlineColor,
    };
  });
}

/** Press Tab (at most `max` times) until the focused element matches `selector`; true when it does. */
export async function tabTo(page: Page, selector: string, max = 40): Promise<boolean> {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    if (await page.evaluate((s) => !!document.activeElement?.matches(s), selector)) return true;
  }
  return false;
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's serious and critical violations on the page, as `id: target…`. */
export async function axeProblems(page: Page): Promise<string[]> {
  // evaluate() runs outside the page's CSP, which forbids injected script tags.
  await page.evaluate(axeSource);
  const result = await page.evaluate(async () => {
    const r = await (window as any).axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v: any) => ({
      id: v.id,
      impact: v.impact,
      targets: v.nodes.slice(0, 3).map((n: any) => n.target.join(' ')),
    }));
  });
  return (result as { id: string; impact: string; targets: string[] }[])
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.targets.join(', ')}`);
}
