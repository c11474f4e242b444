/**
 * Live sessions page against the real daemon and real sandboxes (Docker): the list refreshes on
 * its own, names the chat and its user, and Restart asks first; axe-core finds no serious or
 * critical issue while it lists a session. Skips with the reason when no
 * Docker engine answers (never under CI=true).
 */
import t from 'tap';
import { axeProblems, checkNarrow, launch, screenshot } from '../helpers/browser.js';
import { liveSessionsEngine, openLiveSessions, startLiveSessions } from '../helpers/live-sessions.js';
import { dbCount, dbRows } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';

const engine = await liveSessionsEngine(t);
if (engine) {
  const { docker, image } = engine;
  t.test(
    'live sessions: refreshes on its own with the chat title and the user name; Restart asks first; logged',
    async (t) => {
      const {
        d,
        carolSignIn,
        chat,
        containerOf: containerOfSession,
      } = await startLiveSessions(t, docker, image, 'adm');

      const browser = await launch(t);
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const dialogs: string[] = [];
      let answer = false;
      page.on('dialog', (dlg) => {
        dialogs.push(dlg.message());
        void (answer ? dlg.accept() : dlg.dismiss());
      });
      // The restarts and kills the page asks the server for (a cancelled one asks for none).
      const ops: string[] = [];
      page.on('request', (r) => {
        if (r.method() === 'POST' && /\/api\/admin\/sessions\/.+\/(restart|kill)$/.test(new URL(r.url()).pathname))
          ops.push(new URL(r.url()).pathname.split('/').pop()!);
      });
      /** Run a script in the page: it runs after the click handler (and its confirm()) returned, so any request that handler made has been seen. */
      const afterHandler = () => page.evaluate(() => fetch('/healthz').then((r) => r.status));
      await openLiveSessions(page, d.web.url);
      await page.waitForSelector('#sessions-table');
      t.match(await page.textContent('#sessions-table'), /No live sessions/);

      // carol chats (through the API) while the page is open: the page shows it without a reload.
      t.equal(carolSignIn, 200);
      const sid = await chat('Quarterly numbers please');
      t.ok(sid, 'the chat ran');
      const shownAt = Date.now();
      // The row shows the id's first 8 characters; the whole id is its tooltip.
      await page.waitForFunction((id) => !!document.querySelector(`#sessions-table code.sid[title="${id}"]`), sid!, {
        timeout: 15_000,
      });
      t.ok(Date.now() - shownAt < 12_000, "listed by the page's own refresh");
      const row = (await page.textContent('#sessions-table tbody tr')) ?? '';
      t.match(row, /Quarterly numbers please/, 'the chat title');
      t.match(row, /carol/, 'the user by name');
      t.match(row, /idle \d+ s/, 'how long it has been idle (no turn runs)');
      if (process.getuid?.() === 0) t.match(row, /\d+ MiB · \d+\.\d s CPU/, 'its memory and CPU time');
      await screenshot(page, 'admin-sessions-live');
      await checkNarrow(t, page, 'admin-sessions-live');
      // axe-core on the page while it lists a session (its buttons, ids and names), light and dark.
      t.same(await axeProblems(page), [], 'axe: live sessions with a session listed (light)');
      await page.emulateMedia({ colorScheme: 'dark' });
      t.same(await axeProblems(page), [], 'axe: live sessions with a session listed (dark)');
      await page.emulateMedia({ colorScheme: 'light' });

      const containerOf = () => containerOfSession(sid);
      const first = containerOf();
      t.ok(first);
      // Restart asks first; "Cancel" changes nothing.
      await page.click(`button[aria-label="Restart session ${sid}"]`);
      t.equal(dialogs.length, 1, 'Restart asks');
      t.match(dialogs[0], /Restart session "Quarterly numbers please" of carol/);
      await afterHandler();
      t.same(ops, [], 'cancelled: no restart asked for');
      t.equal(containerOf(), first, 'cancelled: same sandbox');
      answer = true;
      await page.click(`button[aria-label="Restart session ${sid}"]`);
      await page.waitForFunction(
        (old) => {
          const ids = Array.from(document.querySelectorAll('#sessions-table code.container-id'), (e) => e.textContent);
          return ids.length === 1 && ids[0] !== old;
        },
        first!.slice(0, 12),
        { timeout: 120_000 },
      );
      t.not(containerOf(), first, 'restarted');
      const logged = (await dbRows(
        d.database.sql,
        "SELECT actor_id, subject_id, data FROM action_log WHERE event = 'session.restarted'",
      )) as { data: string }[];
      t.equal(logged.length, 1, 'the restart is in the action log');
      t.match(JSON.parse(logged[0].data), { session_id: sid });

      // Kill asks too; Cancel keeps the sandbox, OK ends it and the row goes.
      answer = false;
      const second = containerOf();
      await page.click(`button[aria-label="Kill session ${sid}"]`);
      await waitFor(() => dialogs.length >= 3, 'the kill question');
      t.equal(dialogs.length, 3, 'Kill asks');
      t.match(dialogs[2], /Kill session "Quarterly numbers please" of carol\? Its sandbox ends now/);
      await afterHandler();
      t.same(ops, ['restart'], 'cancelled: no kill asked for');
      t.equal(containerOf(), second, 'cancelled: the sandbox lives on');
      answer = true;
      await page.click(`button[aria-label="Kill session ${sid}"]`);
      await page.waitForFunction(
        () => /No live sessions/.test(document.querySelector('#sessions-table')?.textContent ?? ''),
        undefined,
        { timeout: 60_000 },
      );
      t.equal(containerOf(), undefined, 'killed');
      t.match(await page.textContent('#sess-status'), /killed/);
      t.equal(
        await dbCount(d.database.sql, "SELECT COUNT(*) AS n FROM action_log WHERE event = 'session.killed'"),
        1,
        'the kill is in the action log',
      );

      // Leaving the page ends its refresh: no more reads of the list.
      const reads: number[] = [];
      page.on('request', (r) => {
        if (new URL(r.url()).pathname === '/api/admin/sessions') reads.push(Date.now());
      });
      await page.click('#nav a[href="#/admin/action-log"]');
      await page.waitForSelector('#log-table');
      // Proving that nothing happens takes time: 6 s is more than the page's 5 s refresh (REFRESH_MS).
      await new Promise((r) => setTimeout(r, 6_000));
      t.same(reads, [], 'no refresh after the page was left');
    },
  );
}
