import t from 'tap';
import { start as startOpenAi } from '../../emulator/model-openai.js';
import { start as startAnthropic } from '../../emulator/model-anthropic.js';
import { OpenAiModel } from '../../agent/models/openai.js';
import { AnthropicModel } from '../../agent/models/anthropic.js';
import type { Message } from '../../agent/types.js';
import { DEFAULT_BOUNDS } from '../../agent/models/sdk.js';

/**
 * One provider-neutral transcript, carried across providers (a chat whose model is switched):
 * OpenAI → Anthropic → OpenAI with tool calls, a tool error, a stopped answer and an id another
 * provider made in its history. Each request goes through the official SDK (the adapters build
 * it with the SDKs' types) to a scripted server that refuses what the real API refuses
 * (emulator/model-wire.ts); every one must be accepted.
 */
t.test('OpenAI → Anthropic → OpenAI in one conversation with tool calls: every request well-formed', async (t) => {
  const oa = await startOpenAi({ apiKey: 'k' });
  t.teardown(() => oa.close());
  const an = await startAnthropic({ apiKey: 'k' });
  t.teardown(() => an.close());
  const openai = new OpenAiModel({ baseUrl: oa.url, model: 'gpt-x', apiKey: 'k', bounds: DEFAULT_BOUNDS });
  const anthropic = new AnthropicModel({ baseUrl: an.url, model: 'claude-x', apiKey: 'k', bounds: DEFAULT_BOUNDS });
  const signal = new AbortController().signal;
  const tools = [
    { name: 'add', description: 'Add', inputSchema: { type: 'object', properties: { a: { type: 'number' } } } },
  ];
  const history: Message[] = [{ role: 'user', content: 'add 1 and 2, then chart it' }];
  const call = async (m: OpenAiModel | AnthropicModel) => {
    const reply = await m.complete({ system: 'be brief', messages: history, tools, signal }, () => undefined);
    history.push({ role: 'assistant', text: reply.text, toolCalls: reply.toolCalls });
    for (const c of reply.toolCalls)
      history.push({ role: 'tool', callId: c.id, name: c.name, content: '{"sum":3}', isError: false });
    return reply;
  };

  oa.push(
    { kind: 'reply', text: 'Adding.', tool_calls: [{ name: 'add', arguments: { a: 1 }, id: 'call_abc123' }] },
    { kind: 'reply', text: 'It is 3.' },
  );
  const r1 = await call(openai);
  t.equal(r1.toolCalls[0].id, 'call_abc123');
  await call(openai);
  // A stopped answer and a failed tool, as the service stores them.
  history.push({ role: 'user', content: 'now something long' });
  history.push({ role: 'assistant', text: 'Here is the start ', toolCalls: [], interrupted: 'stopped' });
  history.push({ role: 'user', content: 'use the tool again' });
  history.push({
    role: 'assistant',
    text: '',
    toolCalls: [{ id: 'odd.id/from:elsewhere', name: 'add', input: { a: 5 } }],
  });
  history.push({
    role: 'tool',
    callId: 'odd.id/from:elsewhere',
    name: 'add',
    content: 'the tool failed',
    isError: true,
  });
  history.push({ role: 'assistant', text: '', toolCalls: [], interrupted: 'error' });
  history.push({ role: 'user', content: 'switching to claude' });

  an.push(
    { kind: 'reply', text: 'Claude here.', tool_calls: [{ name: 'add', arguments: { a: 7 } }] },
    { kind: 'reply', text: 'Done.' },
  );
  const r3 = await call(anthropic);
  t.match(r3.toolCalls[0].id, /^toolu_/, 'an Anthropic id');
  await call(anthropic);
  t.equal(an.requests.length, 2, 'both Anthropic requests accepted');
  const wire = an.requests[0].body.messages;
  t.equal(wire[0].role, 'user');
  t.ok(
    wire.every((m: any, i: number) => i === 0 || m.role !== wire[i - 1].role),
    'roles alternate',
  );
  t.match(JSON.stringify(wire), /odd_id_from_elsewhere/, 'a foreign id mapped to the pattern, the same on both sides');
  t.match(JSON.stringify(wire), /The user stopped this answer here/, 'the stop is marked');

  history.push({ role: 'user', content: 'back to openai' });
  oa.push({ kind: 'reply', text: 'OpenAI again.' });
  const r5 = await call(openai);
  t.equal(r5.text, 'OpenAI again.');
  t.equal(oa.requests.length, 3, 'every OpenAI request accepted');
  const last = oa.requests[2].body.messages;
  t.ok(
    last.some((m: any) => m.role === 'tool' && m.tool_call_id === r3.toolCalls[0].id),
    "Claude's call answered under its own id",
  );
  t.ok(r5.usage && r5.usage.input_tokens > 0, 'usage from the stream');
});

t.test('the scripted servers refuse what the real APIs refuse', async (t) => {
  const oa = await startOpenAi({});
  t.teardown(() => oa.close());
  const an = await startAnthropic({});
  t.teardown(() => an.close());
  const post = (url: string, body: unknown) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'k' },
      body: JSON.stringify(body),
    });
  const orphan = await post(`${oa.url}/chat/completions`, {
    model: 'm',
    messages: [
      { role: 'user', content: 'x' },
      { role: 'tool', tool_call_id: 'c', content: 'r' },
    ],
  });
  t.equal(orphan.status, 400, 'OpenAI: a tool message with no call before it');
  const unanswered = await post(`${oa.url}/chat/completions`, {
    model: 'm',
    messages: [
      { role: 'user', content: 'x' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }],
      },
      { role: 'user', content: 'y' },
    ],
  });
  t.equal(unanswered.status, 400, 'OpenAI: a call with no result');
  const twoUsers = await post(`${an.url}/v1/messages`, {
    model: 'm',
    max_tokens: 10,
    messages: [
      { role: 'user', content: 'a' },
      { role: 'user', content: 'b' },
    ],
  });
  t.equal(twoUsers.status, 400, 'Anthropic: roles must alternate');
  const noResult = await post(`${an.url}/v1/messages`, {
    model: 'm',
    max_tokens: 10,
    messages: [
      { role: 'user', content: 'a' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'x', name: 'f', input: {} }] },
      { role: 'user', content: 'b' },
    ],
  });
  t.equal(noResult.status, 400, 'Anthropic: a tool_use with no tool_result');
  const empty = await post(`${an.url}/v1/messages`, {
    model: 'm',
    max_tokens: 10,
    messages: [{ role: 'user', content: [{ type: 'text', text: '' }] }],
  });
  t.equal(empty.status, 400, 'Anthropic: an empty text block');
});
