import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import * as chat from '../domain/chat/store.js';
import { addUser, startTestApp } from '../test/helpers/app.js';
import { browserUnavailable, launch } from '../test/helpers/browser.js';
import { stats, type BenchResult } from './lib.js';

/**
 * The chat page in Debian's chromium: time to first contentful paint of the chat page, and time
 * until a stored 200-message conversation (100 turns; markdown with a table and a code block in
 * every answer, a render_chart chart every 10th turn) is on screen with its charts drawn, against
 * an empty page's first paint from a plain 127.0.0.1 server in the same run. Runs interleave.
 */
const RUNS = 7;
const TURNS = 100;
const CHARTS = TURNS / 10;

const ANSWER = (i: number) =>
  [
    `### Answer ${i}`,
    '',
    `The total for **week ${i}** is ${i * 7}; details in [the sheet](https://example.com/s/${i}).`,
    '',
    '| day | value |',
    '| --- | --- |',
    ...['Mon', 'Tue', 'Wed', 'Thu', 'Fri'].map((d, k) => `| ${d} | ${i + k} |`),
    '',
    '```python',
    `values = [${i}, ${i + 1}, ${i + 2}]`,
    'print(sum(values) / len(values))',
    '```',
  ].join('\n');

export async function run(): Promise<BenchResult | { skipped: string }> {
  const why = browserUnavailable();
  if (why) return { skipped: why };
  const closers: (() => unknown)[] = [];
  const t = { teardown: (fn: () => unknown) => void closers.push(fn) };
  try {
    const app = await startTestApp(t);
    const user = await addUser(app.database, 'bench', 'bench-password-1');
    const db = app.database.sql;
    const session = await chat.createSession(db, user.id, 'A long conversation');
    for (let i = 0; i < TURNS; i++) {
      const turnId = `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
      await chat.startTurn(db, session.id, turnId, `Question ${i}: how did week ${i} go?`);
      if (i % 10 === 0) {
        const spec = {
          type: 'bar',
          data: { labels: ['a', 'b', 'c'], datasets: [{ label: `week ${i}`, data: [i, i + 2, i + 1] }] },
        };
        await chat.toolStarted(db, turnId, `call-${i}`, 'render_chart', { type: 'bar' });
        await chat.toolEnded(db, turnId, `call-${i}`, 'render_chart', true, { spec }, undefined, 12);
      }
      await chat.endTurn(db, turnId, ANSWER(i), 'end_turn');
    }

    const empty = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end('<!doctype html><html><head><title>empty</title></head><body><p>empty</p></body></html>');
    });
    await new Promise<void>((r) => empty.listen(0, '127.0.0.1', r));
    closers.push(() => new Promise((r) => empty.close(r)));
    const emptyUrl = `http://127.0.0.1:${(empty.address() as AddressInfo).port}/`;

    const browser = await launch(t);
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const login = await ctx.newPage();
    await login.goto(app.url + '/#/login');
    await login.fill('#username', 'bench');
    await login.fill('#password', 'bench-password-1');
    await login.keyboard.press('Enter');
    await login.waitForSelector('#prompt');
    await login.close();

    const fcp = (page: Page) =>
      page.evaluate(
        () =>
          new Promise<number>((resolve) => {
            const get = () =>
              performance.getEntriesByType('paint').find((e) => e.name === 'first-contentful-paint')?.startTime;
            const v = get();
            if (v !== undefined) return resolve(v);
            new PerformanceObserver(() => {
              const w = get();
              if (w !== undefined) resolve(w);
            }).observe({ type: 'paint', buffered: true });
          }),
      );

    const emptyFcp: number[] = [];
    const chatFcp: number[] = [];
    const chatReady: number[] = [];
    const convReady: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      const p1 = await ctx.newPage();
      await p1.goto(emptyUrl);
      emptyFcp.push(await fcp(p1));
      await p1.close();

      const p2 = await ctx.newPage();
      await p2.goto(app.url + '/#/chat');
      await p2.waitForSelector('#prompt');
      chatReady.push(await p2.evaluate(() => performance.now()));
      chatFcp.push(await fcp(p2));
      await p2.close();

      const p3 = await ctx.newPage();
      await p3.goto(`${app.url}/#/chat/${session.id}`);
      await p3.waitForFunction(
        ([turns, charts]) =>
          document.querySelectorAll('.msg.assistant[data-done] .markdown table').length === turns &&
          document.querySelectorAll('.chart-box canvas').length === charts,
        [TURNS, CHARTS] as const,
        {
          timeout: 60_000,
          polling: 'raf',
        },
      );
      convReady.push(
        await p3.evaluate(() => new Promise<number>((res) => requestAnimationFrame(() => res(performance.now())))),
      );
      await p3.close();
    }
    const e = stats(emptyFcp);
    const c = stats(chatFcp);
    const cr = stats(chatReady);
    const v = stats(convReady);
    return {
      name: 'ui',
      rows: [
        { what: 'empty page: first contentful paint (ms)', ...e },
        { what: 'chat page: first contentful paint (ms)', ...c },
        { what: 'chat page: input ready (ms)', ...cr },
        { what: `${TURNS * 2}-message conversation with ${CHARTS} charts on screen (ms)`, ...v },
      ],
      ratios: { 'chat FCP / empty FCP (p50)': c.p50 / e.p50, '200-message render / empty FCP (p50)': v.p50 / e.p50 },
      notes: `chromium headless, 1280x900, ${RUNS} interleaved runs; times from navigation start`,
    };
  } finally {
    for (const fn of closers.reverse()) await fn();
  }
}
