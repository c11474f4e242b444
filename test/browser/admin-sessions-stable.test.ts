/**
 * Live sessions page defects (issue 33), against the real daemon and real sandboxes (Docker):
 * a restarted session keeps its place in the list and its turn count (the chat's turns, not the
 * new sandbox's 0); a session id is one short line (its first 8 characters; the whole id as the
 * tooltip and in the copy button's name); at 390 px Restart and Kill are on screen (each session
 * is a card). 1280 px light and 390 px dark, axe-core clean. Skips with the reason when no
 * Docker engine answers (never under CI=true).
 */
import t from 'tap';
import type { Page } from 'playwright-core';
import { axeProblems, checkNarrow, launch, screenshot } from '../helpers/browser.js';
import { liveSessionsEngine, openLiveSessions, startLiveSessions } from '../helpers/live-sessions.js';

/** The rows as [short id, turns] in the order shown. */
const rowsOf = (page: Page) =>
  page.$$eval('#sessions-table tbody tr', (trs) =>
    trs.map((tr) => [
      tr.querySelector('code.sid')?.getAttribute('title') ?? '',
      (tr.querySelector('td[data-label="Turns"]')?.textContent ?? '').trim(),
    ]),
  );

/** Restart and Kill of every row: on screen (not clipped off to the right) at this width. */
const buttonsOnScreen = (page: Page) =>
  page.$$eval(
    '#sessions-table button:not(.link)',
    (bs) =>
      bs.length > 0 &&
      bs
        .map((b) => b.getBoundingClientRect())
        .every((r) => r.width > 0 && r.left >= 0 && r.right <= window.innerWidth + 1),
  );

const engine = await liveSessionsEngine(t);
if (engine) {
  const { docker, image } = engine;
  t.test(
    'live sessions: a restart keeps the row in place with its turn count; short ids; Restart and Kill reachable at 390 px',
    async (t) => {
      const { d, carolSignIn, chat, containerOf } = await startLiveSessions(t, docker, image, 'stb');

      // Two chats of carol's, the first with two turns.
      t.equal(carolSignIn, 200);
      const first = await chat('First chat');
      await chat('And again', first);
      const second = await chat('Second chat');

      const browser = await launch(t);
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, colorScheme: 'light' });
      page.on('dialog', (dlg) => void dlg.accept());
      await openLiveSessions(page, d.web.url);
      await page.waitForFunction(() => document.querySelectorAll('#sessions-table code.sid').length === 2);
      t.same(
        await rowsOf(page),
        [
          [first, '2'],
          [second, '1'],
        ],
        "in the chats' order, with their turns",
      );

      // A short id on one line; the whole id on hover and in the copy button's name.
      // An inline element that wraps has one box per line.
      const sid = await page.$eval('#sessions-table code.sid', (c) => ({
        text: c.textContent,
        title: c.getAttribute('title'),
        lines: c.getClientRects().length,
      }));
      t.equal(sid.text, first.slice(0, 8), 'the first 8 characters');
      t.equal(sid.title, first, 'the whole id on hover');
      t.equal(sid.lines, 1, 'one line');
      t.equal(await page.locator(`button[aria-label="Copy id ${first}"]`).count(), 1, 'copy the whole id');
      t.same(await axeProblems(page), [], 'axe: two sessions (1280 px, light)');
      await screenshot(page, 'admin-sessions-stable');

      // Restart the first: a new sandbox, the row stays first with its 2 turns.
      const before = containerOf(first)!;
      await page.click(`button[aria-label="Restart session ${first}"]`);
      await page.waitForFunction(
        () => /restarted/.test(document.querySelector('#sess-status')?.textContent ?? ''),
        undefined,
        { timeout: 120_000 },
      );
      t.not(containerOf(first), before, 'a new sandbox');
      t.same(
        await rowsOf(page),
        [
          [first, '2'],
          [second, '1'],
        ],
        'same place, same turn count after the restart',
      );
      // And on the page's own refresh too.
      const shown = (await page.textContent('#sessions-updated')) ?? '';
      await page.waitForFunction(
        (old) => (document.querySelector('#sessions-updated')?.textContent ?? '') !== old,
        shown,
        { timeout: 15_000 },
      );
      t.same(
        await rowsOf(page),
        [
          [first, '2'],
          [second, '1'],
        ],
        'after a refresh as well',
      );

      // 390 px, dark: each session a card, Restart and Kill on screen.
      await page.emulateMedia({ colorScheme: 'dark' });
      await page.setViewportSize({ width: 390, height: 900 });
      t.ok(await buttonsOnScreen(page), 'Restart and Kill on screen at 390 px');
      t.same(
        await page.$$eval('#sessions-table code.sid', (cs) => cs.map((c) => c.getClientRects().length)),
        [1, 1],
        'ids on one line at 390 px',
      );
      t.same(await axeProblems(page), [], 'axe: two sessions (390 px, dark)');
      await checkNarrow(t, page, 'admin-sessions-dark');
      await page.click(`button[aria-label="Kill session ${second}"]`);
      await page.waitForFunction(() => document.querySelectorAll('#sessions-table code.sid').length === 1, undefined, {
        timeout: 60_000,
      });
      t.same(await rowsOf(page), [[first, '2']], 'killed: the other stays');
    },
  );
}
