/**
 * A model per chat in a real browser (docs/chat.md "A model per chat"): an admin adds a model on
 * the Chat models page (the key field is write-only); a user picks it for a new chat, switches the
 * chat back mid-way (not while a turn runs), and the turns go to the model chosen. At 1280 px light
 * and 390 px dark, with axe-core and a labelled picker. The turn runner is a scripted TurnRunner
 * that records the model revision each turn asked for; from the route to the DOM it is the real code.
 */
import t from 'tap';
import type { TurnRequest, TurnResult, TurnRunner } from '../../core/index.js';
import { addUser, startTestApp } from '../helpers/app.js';
import {
  axeProblems,
  browserUnavailable,
  checkNarrow,
  launch,
  screenshot,
  settled,
  unlabelledControls,
} from '../helpers/browser.js';
import { getChatModel } from '../../domain/chat/models.js';

const PASSWORD = 'erin-password-1';
const KEY = 'sk-browser-secret-key-0123456789';

class RecordingRunner implements TurnRunner {
  turns: { prompt: string; model?: string }[] = [];
  async runTurn(req: TurnRequest): Promise<TurnResult> {
    this.turns.push({ prompt: req.prompt, model: req.modelRevision });
    if (req.prompt === 'hold') {
      req.onEvent({ type: 'tool_start', call_id: 'c1', tool: 'slow_tool', input: {} });
      await new Promise<void>((resolve) => req.signal.addEventListener('abort', () => resolve(), { once: true }));
      return { stop_reason: 'cancelled' };
    }
    req.onEvent({ type: 'text_delta', text: `Answered by ${req.modelRevision}.` });
    return { stop_reason: 'end_turn' };
  }
}

const why = browserUnavailable();
if (why) t.plan(0, why);
else {
  t.test('the model picker and the Chat models admin page', async (t) => {
    const runner = new RecordingRunner();
    const app = await startTestApp(t, { services: { chat: { runner } } });
    await addUser(app.database, 'root', PASSWORD, { superuser: true });
    await addUser(app.database, 'erin', PASSWORD);
    const browser = await launch(t);

    // The admin adds a model on the admin page.
    const admin = await browser.newPage({ viewport: { width: 1280, height: 900 }, colorScheme: 'light' });
    await admin.goto(app.url + '/#/login');
    await admin.fill('#username', 'root');
    await admin.fill('#password', PASSWORD);
    await admin.keyboard.press('Enter');
    await admin.waitForSelector('#new-session');
    await admin.goto(app.url + '/#/admin/chat-models');
    await admin.waitForSelector('#chat-models-table');
    t.match(
      await admin.textContent('#chat-models-table'),
      /Demo model.*default/,
      'the default entry from the environment',
    );
    await admin.fill('#cm-id', 'claude');
    await admin.fill('#cm-label', 'Claude Sonnet');
    await admin.selectOption('#cm-provider', 'anthropic');
    await admin.fill('#cm-model', 'claude-sonnet');
    await admin.fill('#cm-base', 'https://api.anthropic.example');
    await admin.fill('#cm-key', KEY);
    t.equal(await admin.getAttribute('#cm-key', 'type'), 'password', 'the key field is masked');
    t.notOk(await admin.isChecked('#cm-images'), 'a new model takes no images until said');
    await admin.check('#cm-images');
    await admin.click('#cm-save');
    await admin.waitForSelector('#chat-models-table >> text=Claude Sonnet');
    t.equal(await admin.inputValue('#cm-key'), '', 'the form forgets the key');
    t.notOk((await admin.content()).includes(KEY), 'the page never shows the key');
    await admin.click('button[aria-label="Edit Claude Sonnet"]');
    t.equal(await admin.inputValue('#cm-key'), '', 'editing: the key is not filled in (write-only)');
    t.ok(await admin.isChecked('#cm-images'), 'editing: Takes images as saved');
    t.match(await getChatModel(app.database.sql, 'claude'), { images: true }, 'saved: the model takes images');
    t.same(await unlabelledControls(admin), [], 'every admin control is labelled');
    t.same(await axeProblems(admin), [], 'axe: the admin page');
    await screenshot(admin, 'admin-chat-models');

    // The user: pick Claude for a new chat, then switch back to the default mid-chat.
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, colorScheme: 'light' });
    await page.goto(app.url + '/#/login');
    await page.fill('#username', 'erin');
    await page.fill('#password', PASSWORD);
    await page.keyboard.press('Enter');
    await page.waitForSelector('#model-picker option[value="claude"]', { state: 'attached' });
    t.equal(await page.inputValue('#model-picker'), 'default', 'a new chat starts with the default');
    t.equal(await page.textContent('label[for="model-picker"]'), 'Model', 'the picker is labelled');
    await page.selectOption('#model-picker', 'claude');
    await page.waitForSelector('#model >> text=claude-sonnet');
    await page.fill('#prompt', 'hello claude');
    await page.click('#send');
    await page.waitForSelector('text=Answered by claude:1.');
    t.same(
      runner.turns.at(-1),
      { prompt: 'hello claude', model: 'claude:1' },
      'the first turn asked for the chosen model',
    );

    // While a turn runs the picker waits.
    await page.fill('#prompt', 'hold');
    await page.click('#send');
    await page.waitForSelector('#stop:not([disabled])');
    t.ok(await page.isDisabled('#model-picker'), 'no switch while a turn runs');
    await page.click('#stop');
    await page.waitForSelector('#send');
    await page.waitForSelector('#model-picker:not([disabled])');

    await page.selectOption('#model-picker', 'default');
    await page.waitForSelector('#model[data-demo="true"]');
    await page.fill('#prompt', 'and now?');
    await page.click('#send');
    await page.waitForSelector('text=Answered by default:1.');
    t.equal(runner.turns.at(-1)?.model, 'default:1', 'after the switch the turn asked for the default');
    await page.reload();
    await page.waitForSelector('text=Answered by default:1.');
    await page.waitForFunction(
      () => (document.querySelector('#model-picker') as HTMLSelectElement | null)?.value === 'default',
    );
    t.same(await unlabelledControls(page), [], 'every chat control is labelled');
    t.same(await axeProblems(page), [], 'axe: the chat page, light');
    await screenshot(page, 'chat-model-picker-1280-light');

    // 390 px, dark: the picker fits, nothing scrolls sideways, axe is clean.
    const phone = page;
    await phone.setViewportSize({ width: 390, height: 800 });
    await phone.emulateMedia({ colorScheme: 'dark' });
    await phone.reload();
    await phone.waitForSelector('text=Answered by default:1.');
    // On a phone the model row is in the Menu (docs/chat.md "On a phone").
    await phone.click('#chat-menu-button');
    await phone.click('#menu-model');
    await phone.waitForSelector('#model-picker');
    await settled(phone);
    const box = await phone.locator('#model-picker').boundingBox();
    t.ok(box && box.x >= 0 && box.x + box.width <= 390, 'the picker is inside the screen');
    await checkNarrow(t, phone, 'chat-model-picker-dark', 390);
    t.same(await axeProblems(phone), [], 'axe: the chat page, 390 px dark');
  });
}
