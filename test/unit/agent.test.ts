import t from 'tap';
import { readAgentSettings } from '../../agent/env.js';
import { DemoModel } from '../../agent/models/demo.js';
import type { Message, ToolDef } from '../../agent/types.js';

t.test('agent settings: defaults, allow-list, tool env, every problem listed', async (t) => {
  const s = readAgentSettings({});
  t.equal(s.provider, 'demo');
  t.equal(s.maxSteps, 12);
  t.equal(s.modelTimeoutMs, 30_000);
  t.equal(s.allowedTools, null);
  t.same(
    s.mcpServers.map((x) => x.name),
    ['workspace', 'extensions'],
  );
  t.same(
    s.mcpServers,
    [
      { name: 'workspace', inProcess: 'workspace' },
      { name: 'extensions', inProcess: 'extensions' },
    ],
    'hosted in the agent process',
  );

  const s2 = readAgentSettings({
    AGENT_MODEL_PROVIDER: 'openai',
    AGENT_MODEL: 'gpt',
    AGENT_MODEL_BASE_URL: 'http://127.0.0.1:8700/model/v1',
    AGENT_MODEL_API_KEY: 'placeholder',
    AGENT_TOOLS: 'send_email, rasterize_chart',
    MAIL_API_KEY: 'ph',
    MAIL_BASE_URL: 'http://127.0.0.1:8700/mail',
    SHEETS_BASE_URL: 'http://x',
    AGENT_USER_TOKEN: 'tok',
    AIRLOCK_MODEL_API_KEY: 'real-key-must-not-pass',
    HOME: '/home/x',
  });
  t.same([...s2.allowedTools!].sort(), ['rasterize_chart', 'send_email']);
  t.same(Object.keys(s2.toolEnv).sort(), ['AGENT_USER_TOKEN', 'MAIL_API_KEY', 'MAIL_BASE_URL', 'SHEETS_BASE_URL']);
  t.same([...readAgentSettings({ AGENT_TOOLS: '' }).allowedTools!], [], 'empty list loads nothing');

  let err: any;
  try {
    readAgentSettings({ AGENT_MODEL_PROVIDER: 'anthropic', AGENT_MAX_STEPS: '0', AGENT_MCP_SERVERS: '{"x":1}' });
  } catch (e) {
    err = e;
  }
  t.equal(err?.code, 'ERR_AGENT_CONFIG');
  for (const name of ['AGENT_MODEL_BASE_URL', 'AGENT_MAX_STEPS', 'AGENT_MCP_SERVERS', 'AGENT_MODEL:'])
    t.match(err.message, name, `${name} listed`);
  t.throws(() => readAgentSettings({ AGENT_MODEL_PROVIDER: 'gemini' }), { code: 'ERR_AGENT_CONFIG' });
});

const TOOLS: ToolDef[] = [
  'rasterize_chart',
  'send_email',
  'render_chart',
  'search_spreadsheets',
  'fetch_sheet',
  'read_file_table',
].map((name) => ({
  name,
  description: '',
  inputSchema: {
    type: 'object',
    properties:
      name === 'send_email'
        ? { to: { type: 'array' }, subject: {}, text: {}, html: {}, attachments: { type: 'array' } }
        : {},
  },
}));

async function ask(messages: Message[], tools = TOOLS) {
  const deltas: string[] = [];
  const r = await new DemoModel().complete({ system: '', messages, tools, signal: new AbortController().signal }, (d) =>
    deltas.push(d),
  );
  t.equal(deltas.join(''), r.text, 'streamed text adds up to the reply');
  return r;
}

t.test('demo model: a spreadsheet chart and its mail are named after the spreadsheet and its column', async (t) => {
  const prompt: Message = { role: 'user', content: 'chart the sample spreadsheet and email it to someone@example.com' };
  const found = JSON.stringify({
    files: [{ id: 'sheet-sample-1', name: 'Sample sales 2026', modified_time: '2026-01-01T00:00:00Z' }],
  });
  const rows = JSON.stringify({
    range: 'Sales!A1:Z200',
    values: [
      ['Month', 'Sales'],
      ['Jan', '120'],
      ['Feb', '135'],
    ],
  });
  const file = '0f8fad5b-d9cb-469f-a165-70867728950e.png';
  const tool = (name: string, content: string): Message => ({
    role: 'tool',
    callId: name,
    name,
    content,
    isError: false,
  });
  const s1 = await ask([prompt]);
  t.match(s1.toolCalls, [{ name: 'search_spreadsheets', input: { query: 'sample' } }]);
  const s2 = await ask([prompt, tool('search_spreadsheets', found)]);
  t.match(s2.toolCalls, [{ name: 'fetch_sheet', input: { spreadsheet_id: 'sheet-sample-1' } }]);
  const s3 = await ask([prompt, tool('search_spreadsheets', found), tool('fetch_sheet', rows)]);
  t.match(s3.toolCalls, [
    {
      name: 'rasterize_chart',
      input: { title: 'Sample sales 2026', labels: ['Jan', 'Feb'], datasets: [{ label: 'Sales', data: [120, 135] }] },
    },
  ]);
  const s4 = await ask([
    prompt,
    tool('search_spreadsheets', found),
    tool('fetch_sheet', rows),
    tool('rasterize_chart', JSON.stringify({ filename: file })),
  ]);
  t.match(s4.toolCalls, [
    {
      name: 'send_email',
      input: { to: ['someone@example.com'], subject: 'Chart: Sample sales 2026', attachments: [file] },
    },
  ]);
  const s5 = await ask([
    prompt,
    tool('search_spreadsheets', found),
    tool('fetch_sheet', rows),
    tool('rasterize_chart', file),
    tool('send_email', '{}'),
  ]);
  t.match(s5.text, /"Sample sales 2026".*someone@example\.com/);
});

t.test('demo model: "chart my file sales.csv and email it" reads the uploaded file with read_file_table', async (t) => {
  const prompt: Message = { role: 'user', content: 'chart my file sales.csv and email it to someone@example.com' };
  const rows = JSON.stringify({
    range: 'sales!A1:B3',
    rows: [
      ['Month', 'Sales'],
      ['Jan', '120'],
      ['Feb', '135'],
    ],
    truncated: false,
    sheet: 'sales',
    notes: [],
  });
  const file = '0f8fad5b-d9cb-469f-a165-70867728950e.png';
  const tool = (name: string, content: string): Message => ({
    role: 'tool',
    callId: name,
    name,
    content,
    isError: false,
  });
  t.match((await ask([prompt])).toolCalls, [{ name: 'read_file_table', input: { name: 'sales.csv' } }]);
  const s2 = await ask([prompt, tool('read_file_table', rows)]);
  t.match(s2.toolCalls, [
    {
      name: 'rasterize_chart',
      input: { title: 'sales.csv', labels: ['Jan', 'Feb'], datasets: [{ label: 'Sales', data: [120, 135] }] },
    },
  ]);
  const s3 = await ask([
    prompt,
    tool('read_file_table', rows),
    tool('rasterize_chart', JSON.stringify({ filename: file })),
  ]);
  t.match(s3.toolCalls, [
    { name: 'send_email', input: { to: ['someone@example.com'], subject: 'Chart: sales.csv', attachments: [file] } },
  ]);
  t.match(
    (await ask([prompt, tool('read_file_table', rows), tool('rasterize_chart', file), tool('send_email', '{}')])).text,
    /charted sales\.csv .*someone@example\.com/,
  );
  const shown = { role: 'user', content: 'plot book.xlsx' } satisfies Message;
  t.match(
    (await ask([shown, tool('read_file_table', rows)])).toolCalls,
    [{ name: 'render_chart' }],
    'no recipient: a chart in the chat',
  );
});

t.test('demo model plans follow the conversation', async (t) => {
  const prompt: Message = { role: 'user', content: 'chart 3 5 8 and email the chart to a@b.c' };
  const s1 = await ask([prompt]);
  t.match(s1.toolCalls, [{ name: 'rasterize_chart', input: { type: 'bar', datasets: [{ data: [3, 5, 8] }] } }]);
  const file = '0f8fad5b-d9cb-469f-a165-70867728950e.png';
  const s2 = await ask([
    prompt,
    { role: 'assistant', text: '', toolCalls: s1.toolCalls },
    {
      role: 'tool',
      callId: s1.toolCalls[0].id,
      name: 'rasterize_chart',
      content: JSON.stringify({ chart_attachment: file }),
      isError: false,
    },
  ]);
  t.match(
    s2.toolCalls,
    [{ name: 'send_email', input: { to: ['a@b.c'], attachments: [file] } }],
    'the file name passes unchanged',
  );
  t.match((s2.toolCalls[0].input as { html: string }).html, `cid:${file}`, 'the HTML shows the chart inline');
  const s3 = await ask([
    prompt,
    { role: 'assistant', text: '', toolCalls: s1.toolCalls },
    { role: 'tool', callId: 'x', name: 'rasterize_chart', content: file, isError: false },
    { role: 'assistant', text: '', toolCalls: s2.toolCalls },
    { role: 'tool', callId: 'y', name: 'send_email', content: '{"sent":true}', isError: false },
  ]);
  t.same(s3.toolCalls, []);
  t.match(s3.text, /a@b\.c.*demo model/);

  const failed = await ask([
    prompt,
    { role: 'assistant', text: '', toolCalls: s1.toolCalls },
    { role: 'tool', callId: 'x', name: 'rasterize_chart', content: 'boom', isError: true },
  ]);
  t.same(failed.toolCalls, []);
  t.match(failed.text, /^I could not finish: the rasterize_chart step did not work \(boom\)\.$/);
  // A denied or timed-out send reads as a sentence, never the proxy's error string (issue 41).
  const refused = async (content: string) =>
    (
      await ask([
        prompt,
        { role: 'assistant', text: '', toolCalls: s2.toolCalls },
        { role: 'tool', callId: 'y', name: 'send_email', content, isError: true },
      ])
    ).text;
  const denied = await refused('the user did not approve this message; it was not sent (ERR_MAIL_DENIED)');
  t.equal(
    denied,
    'You chose not to send the e-mail, so it was not sent. Tell me what to change if you want to try again.',
  );
  t.notMatch(denied, /ERR_|failed|send_email/);
  t.match(
    await refused('nobody decided in time (ERR_MAIL_APPROVAL_TIMEOUT)'),
    /^The e-mail was not sent: nobody approved it in time/,
  );

  const fallback = await ask([{ role: 'user', content: 'tell me a joke' }]);
  t.same(fallback.toolCalls, []);
  t.match(fallback.text, /demo model/);

  const noMail = await ask(
    [prompt],
    TOOLS.filter((x) => x.name !== 'rasterize_chart'),
  );
  t.same(noMail.toolCalls, []);
  t.match(noMail.text, /rasterize_chart tool.*not available/);
});
