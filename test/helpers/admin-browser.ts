import type { Browser, Page } from 'playwright-core';
import { addUser, startTestApp, type TestApp } from './app.js';
import { launch } from './browser.js';

export const ROOT_PW = 'root-password-123';

export interface AdminRig {
  app: TestApp;
  page: Page;
  browser: Browser;
  /** The superuser's id (signed in as root). */
  root: number;
  /** A plain user's id. */
  bob: number;
  /** Every confirm() and alert() text the page showed, in order. */
  dialogs: string[];
  /** What the next dialogs answer: true accepts (the default), false cancels. */
  answer: { accept: boolean };
}

/** Sign in as root on the login page (the page is on the app, or goes there). */
export async function loginAsRoot(page: Page, url: string): Promise<void> {
  if (!page.url().startsWith(url)) await page.goto(url + '/');
  await page.waitForSelector('#username');
  await page.fill('#username', 'root');
  await page.fill('#password', ROOT_PW);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#nav a[href="#/admin/data-roles"]', { state: 'attached' });
}

/** A test app with root (superuser) and bob, and a chromium page signed in as root at `width` px. */
export async function adminRig(t: { teardown(fn: () => unknown): void }, width = 1280): Promise<AdminRig> {
  const app = await startTestApp(t);
  const root = (await addUser(app.database, 'root', ROOT_PW, { superuser: true, email: 'root@local.test' })).id;
  const bob = (await addUser(app.database, 'bob', 'bob-password-123')).id;
  const browser = await launch(t);
  const page = await browser.newPage({ viewport: { width, height: 900 } });
  const dialogs: string[] = [];
  const answer = { accept: true };
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void (answer.accept ? d.accept() : d.dismiss());
  });
  await loginAsRoot(page, app.url);
  return { app, page, browser, root, bob, dialogs, answer };
}

/** Open admin page `id` (#/admin/<id>) and wait for `ready`. */
export async function openAdmin(page: Page, url: string, id: string, ready: string): Promise<void> {
  await page.goto(`${url}/#/admin/${id}`);
  await page.waitForSelector(ready);
}
