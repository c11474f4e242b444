/**
 * The chat page's rough edges of issue 41, in a real Chromium against the real routes (the turn
 * runner is scripted: it records the model each turn asked for and answers with fixed Markdown):
 * - a model picked for a new chat at once, as soon as the list shows, is the model the turn asks
 *   for, ten new chats in a row (the default used to win a race with the pick);
 * - a message with an attached file is titled from the user's words, never "Attached: uploads/…";
 * - LaTeX is shown as code (not raw dollars in the text), a blockquote has a visible bar;
 * - the feedback thumbs are inline SVG icons (no emoji that a machine without an emoji font draws
 *   as empty boxes);
 * - the chat list shows the time only for today's chats;
 * - a chart is drawn in the theme's colours, and again when the theme changes.
 */
import t from 'tap';
import type { TurnRequest, TurnResult, TurnRunner } from '../../core/index.js';
import { atRestEncryptor } from '../../core/index.js';
import { createChatModel } from '../../domain/chat/models.js';
import { addUser, startTestApp } from '../helpers/app.js';
import { browserUnavailable, launch, screenshot } from '../helpers/browser.js';

const PASSWORD = 'erin-password-1';
const MARKDOWN = [
  'Euler: $e^{i\\pi} + 1 = 0$ and',
  '',
  '$$\\int_0^1 x^2\\,dx = \\tfrac13$$',
  '',
  '> A quoted line.',
  '',
  'The end.',
].join('\n');

class RecordingRunner implements TurnRunner {
  turns: { prompt: string; model?: string }[] = [];
  async runTurn(req: TurnRequest): Promise<TurnResult> {
    this.turns.push({ prompt: req.prompt, model: req.modelRevision });
    if (req.prompt === 'chart') {
      const chart = {
        type: 'bar',
        data: { labels: ['Q1', 'Q2'], datasets: [{ label: 'Sales', data: [3, 5] }] },
        options: { plugins: { title: { display: true, text: 'Sales' } } },
      };
      req.onEvent({ type: 'tool_start', call_id: 'c1', tool: 'render_chart', input: { type: 'bar' } });
      req.onEvent({
        type: 'tool_end',
        call_id: 'c1',
        tool: 'render_chart',
        ok: true,
        output: JSON.stringify({ chart }),
        duration_ms: 2,
      });
    }
    req.onEvent({
      type: 'text_delta',
      text: req.prompt === 'markdown' ? MARKDOWN : `Answered by ${req.modelRevision}.`,
    });
    return { stop_reason: 'end_turn' };
  }
}

const why = browserUnavailable();
if (why) t.plan(0, why);
else {
  t.test('the chat page: the model picked at once, titles, LaTeX and quotes, thumbs, today', async (t) => {
    const runner = new RecordingRunner();
    const app = await startTestApp(t, { services: { chat: { runner } } });
    await addUser(app.database, 'erin', PASSWORD);
    await createChatModel(app.database.sql, atRestEncryptor(app.config), {
      id: 'claude',
      label: 'Claude Sonnet',
      provider: 'anthropic',
      model: 'claude-sonnet',
      base_url: 'https://api.anthropic.example',
      api_key: 'sk-x',
      context_tokens: 200000,
    });
    const browser = await launch(t);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, colorScheme: 'light' });
    await page.goto(app.url + '/#/login');
    await page.fill('#username', 'erin');
    await page.fill('#password', PASSWORD);
    await page.keyboard.press('Enter');
    await page.waitForSelector('#new-session');

    // Ten new chats: each picks Claude the moment the list shows (in the same task that drew it,
    // as a quick user on a slow frame does), then sends.
    for (let i = 0; i < 10; i++) {
      await page.goto(app.url + '/#/chat');
      await page.reload();
      await page.evaluate(() => {
        const pick = () => {
          const sel = document.querySelector<HTMLSelectElement>('#model-picker');
          if (!sel?.querySelector('option[value="claude"]')) return false;
          sel.value = 'claude';
          sel.dispatchEvent(new Event('change', { bubbles: true }));
          return true;
        };
        if (pick()) return;
        const mo = new MutationObserver(() => pick() && mo.disconnect());
        mo.observe(document.body, { childList: true, subtree: true });
      });
      await page.waitForSelector('#model >> text=claude-sonnet');
      await page.fill('#prompt', `pick ${i}`);
      await page.click('#send');
      await page.waitForSelector(`.msg.assistant[data-done] >> text=Answered by`);
      t.equal(await page.inputValue('#model-picker'), 'claude', `chat ${i}: the picker still shows the pick`);
    }
    const picked = runner.turns.filter((x) => x.prompt.startsWith('pick '));
    t.same(
      picked.map((x) => x.model),
      Array(10).fill('claude:1'),
      'every new chat asked for the model picked, none for the default',
    );

    // LaTeX as code, a blockquote with its bar, the thumbs as SVG, today's chats with a time only.
    await page.goto(app.url + '/#/chat');
    await page.fill('#prompt', 'markdown');
    await page.click('#send');
    await page.waitForSelector('.msg.assistant[data-done] >> text=The end.');
    const answer = page.locator('.msg.assistant').last();
    t.equal(await answer.locator('p code').first().textContent(), 'e^{i\\pi} + 1 = 0', 'inline LaTeX is inline code');
    t.equal(
      (await answer.locator('pre code.language-latex').textContent())?.trim(),
      '\\int_0^1 x^2\\,dx = \\tfrac13',
      'display LaTeX is a latex code block',
    );
    t.notMatch(await answer.locator('.markdown').innerText(), /\$/, 'no raw dollar left in the text');
    const bar = await answer
      .locator('blockquote')
      .evaluate((el) => [getComputedStyle(el).borderLeftStyle, getComputedStyle(el).borderLeftWidth]);
    t.same(bar, ['solid', '4px'], 'a blockquote has a visible bar');
    await page.waitForSelector('.thumb.up svg');
    t.equal(await page.locator('.msg.assistant').last().locator('.thumb svg').count(), 2, 'both thumbs are SVG icons');
    t.notMatch(await page.locator('.feedback').last().innerText(), /\p{Extended_Pictographic}/u, 'no emoji left');
    const when = await page.locator('.session-group:has(h3:text-is("Today")) .session-date time').first().innerText();
    t.match(when, /^\d{1,2}:\d{2}(\s?[AP]M)?$/, `today's chat shows a time only (${when})`);
    await page.locator('.thumb.up').last().click();
    await page.waitForSelector('.thumb.up[aria-pressed="true"]');
    await screenshot(page, 'chat-edges-markdown-1280-light');

    // A chart follows the theme: drawn in the light colours, drawn again in the dark ones.
    await page.fill('#prompt', 'chart');
    await page.click('#send');
    await page.waitForSelector('.chart-box canvas');
    const chartColours = () =>
      page.evaluate(() => {
        const box = document.querySelector('.chart-box')!;
        const c = (window as unknown as { Chart: { defaults: { color: string } } }).Chart.defaults.color;
        // The bars keep chart.js's automatic colours (not the faint default grey).
        const bar = (
          window as unknown as {
            Chart: { getChart(c: HTMLCanvasElement): { data: { datasets: { backgroundColor?: unknown }[] } } };
          }
        ).Chart.getChart(box.querySelector('canvas')!);
        return {
          background: getComputedStyle(box).backgroundColor,
          text: c,
          bar: String(bar.data.datasets[0]!.backgroundColor ?? ''),
        };
      });
    t.same(
      await chartColours(),
      { background: 'rgb(255, 255, 255)', text: '#1b1f24', bar: 'rgba(54, 162, 235, 0.5)' },
      'light: a white box, dark text',
    );
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.waitForFunction(
      () => (window as unknown as { Chart: { defaults: { color: string } } }).Chart.defaults.color === '#e6edf3',
    );
    t.same(
      await chartColours(),
      { background: 'rgb(22, 27, 34)', text: '#e6edf3', bar: 'rgba(54, 162, 235, 0.5)' },
      "dark: the panel's colour, light text",
    );
    await page.locator('.chart-box').scrollIntoViewIfNeeded();
    await screenshot(page, 'chat-edges-chart-1280-dark', { fullPage: false });
  });
}
