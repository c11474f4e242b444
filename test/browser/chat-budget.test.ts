/**
 * A budget as the user meets it on the chat page (docs/usage.md "Budgets"): at 80 % the answer ends
 * with the warning `done` carries, past 100 % it says the next message is refused, and the next
 * prompt is refused with the server's sentence — no turn runs. The turn runner is a scripted
 * TurnRunner reporting known token usage; from the route (budget check, usage rollup) to the DOM it
 * is the real code.
 */
import t from 'tap';
import type { TurnRequest, TurnResult, TurnRunner } from '../../core/index.js';
import { createBudget } from '../../domain/usage/index.js';
import { addUser, startTestApp } from '../helpers/app.js';
import { axeProblems, browserUnavailable, launch } from '../helpers/browser.js';

const PASSWORD = 'fay-password-12';

class MeteredRunner implements TurnRunner {
  turns = 0;
  async runTurn(req: TurnRequest): Promise<TurnResult> {
    this.turns++;
    req.onEvent({ type: 'text_delta', text: `Answer ${this.turns}.` });
    return { stop_reason: 'end_turn', usage: { input_tokens: 700, output_tokens: 100 } };
  }
}

const why = browserUnavailable();
if (why) t.plan(0, why);
else {
  t.test('the 80 % warning, the used-up warning and the refusal on the chat page', async (t) => {
    const runner = new MeteredRunner();
    const app = await startTestApp(t, { services: { chat: { runner } } });
    const root = (await addUser(app.database, 'root', PASSWORD, { superuser: true })).id;
    const fay = (await addUser(app.database, 'fay', PASSWORD)).id;
    await createBudget(app.database.sql, root, {
      scope: 'user',
      subject_id: fay,
      metric: 'tokens',
      period: 'day',
      amount: 1000,
    });
    const browser = await launch(t);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(app.url + '/#/login');
    await page.fill('#username', 'fay');
    await page.fill('#password', PASSWORD);
    await page.keyboard.press('Enter');
    await page.waitForSelector('#prompt');

    await page.fill('#prompt', 'first');
    await page.click('#send');
    await page.waitForSelector('text=You have used 80 % of your daily token budget.');
    t.same(await axeProblems(page), [], 'axe: the warning');
    await page.fill('#prompt', 'second');
    await page.click('#send');
    await page.waitForSelector('text=You have used up your daily token budget: your next message will be refused.');
    t.equal(runner.turns, 2);
    await page.fill('#prompt', 'third');
    await page.click('#send');
    await page.waitForSelector(
      'text=/You can chat again tomorrow \\(UTC\\), or when an administrator raises the budget/',
    );
    t.equal(runner.turns, 2, 'the refused prompt ran no turn');
  });
}
