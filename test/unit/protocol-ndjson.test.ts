import t from 'tap';
import { PassThrough } from 'node:stream';
import {
  AgentEventSchema,
  ChildInboundSchema,
  ChildOutboundSchema,
  ControlMessageSchema,
  ControlRequestSchema,
  McpToolResultSchema,
  MAX_LINE_BYTES,
  AppError,
  protocolIssues,
  rejectedRequestId,
  SessionProfileSchema,
  checkMessage,
  protocolLogFields,
  readMessages,
  writeMessage,
  type ChildInbound,
} from '../../core/index.js';

/** Feed `chunks` through readMessages(schema) and collect what comes out. */
function feed<T>(
  schema: Parameters<typeof readMessages<T>>[1]['schema'],
  chunks: string[],
): { msgs: T[]; errs: AppError[] } {
  const s = new PassThrough();
  const msgs: T[] = [];
  const errs: AppError[] = [];
  readMessages(s, { schema, onMessage: (m) => msgs.push(m), onReject: (e) => errs.push(e) });
  for (const c of chunks) s.write(c);
  return { msgs, errs };
}

t.test('lines are split across chunks, blank lines skipped, good ones typed', async (t) => {
  const r = feed(ChildInboundSchema, [
    '{"type":"prompt","turn_id":"a",',
    '"prompt":"hi"}\n\n  \n{"type":"cancel","turn_id":"a"}\n',
  ]);
  t.same(r.msgs, [
    { type: 'prompt', turn_id: 'a', prompt: 'hi' },
    { type: 'cancel', turn_id: 'a' },
  ]);
  t.same(r.errs, []);
});

t.test('not JSON, wrong shape, unknown type and an overlong line are refused with codes', async (t) => {
  const r = feed(ChildInboundSchema, [
    'not json\n',
    '{"type":"prompt","turn_id":"a"}\n',
    '{"type":"delete-everything","turn_id":"a"}\n',
    '[1,2]\n',
    'null\n',
  ]);
  t.same(r.msgs, []);
  t.same(
    r.errs.map((e) => e.code),
    [
      'ERR_PROTOCOL_BAD_JSON',
      'ERR_PROTOCOL_BAD_MESSAGE',
      'ERR_PROTOCOL_BAD_MESSAGE',
      'ERR_PROTOCOL_BAD_MESSAGE',
      'ERR_PROTOCOL_BAD_MESSAGE',
    ],
  );
  t.ok(r.errs.every((e) => e instanceof AppError && e.code.startsWith('ERR_PROTOCOL_') && e.status === 400));
  const long = feed(ChildInboundSchema, ['x'.repeat(MAX_LINE_BYTES + 1)]);
  t.same(
    long.errs.map((e) => e.code),
    ['ERR_PROTOCOL_LINE_TOO_LONG'],
  );
});

t.test('a rejection names fields, never the payload', async (t) => {
  const secret = 'ya29.secret-token-value';
  const r = feed(ControlRequestSchema, [
    JSON.stringify({
      id: 'r1',
      type: 'start',
      spec: { session_id: 's', user_id: 1, placeholders: { MAIL_API_KEY: 42, OTHER: secret }, agent_env: {} },
      extra: secret,
    }).replace('42', '{"v":"' + secret + '"}') + '\n',
  ]);
  t.equal(r.errs.length, 1);
  const e = r.errs[0];
  t.equal(e.code, 'ERR_PROTOCOL_BAD_MESSAGE');
  t.equal(rejectedRequestId(e), 'r1', 'the id is kept so the reply can be matched');
  const logged = JSON.stringify(protocolLogFields(e, 'control')) + e.message + protocolIssues(e).join();
  t.notMatch(logged, secret);
  t.match(protocolIssues(e).join(), /placeholders\.MAIL_API_KEY/);
});

t.test('stop() ignores the rest of the stream (the shell hand-over)', async (t) => {
  const s = new PassThrough();
  const msgs: unknown[] = [];
  const errs: unknown[] = [];
  const reader = readMessages(s, {
    schema: ControlRequestSchema,
    onMessage: (m) => {
      msgs.push(m);
      reader.stop();
    },
    onReject: (e) => errs.push(e),
  });
  s.write('{"id":"1","type":"shell"}\nls -la\n{"id":"2","type":"ping"}\n');
  s.write('more raw bytes\n');
  t.equal(msgs.length, 1);
  t.same(errs, []);
});

t.test('schemas accept the wire format and refuse its near misses', async (t) => {
  t.ok(checkMessage(ChildOutboundSchema, { type: 'ready' }).ok);
  t.ok(checkMessage(ChildOutboundSchema, { type: 'turn_end', turn_id: 't', stop_reason: 'end_turn' }).ok);
  t.notOk(
    checkMessage(ChildOutboundSchema, { type: 'turn_end', turn_id: 't', stop_reason: 'finished' }).ok,
    'unknown stop reason',
  );
  t.ok(
    checkMessage(AgentEventSchema, {
      type: 'tool_end',
      call_id: 'c',
      tool: 'x',
      ok: true,
      output: { a: 1 },
      duration_ms: 3,
    }).ok,
  );
  t.notOk(
    checkMessage(AgentEventSchema, { type: 'tool_start', call_id: 'c', tool: 'x', input: 'str' }).ok,
    'input must be an object',
  );
  t.ok(
    checkMessage(ControlMessageSchema, {
      type: 'reply',
      id: '1',
      ok: false,
      error: { code: 'ERR_SESSION_BUSY', message: 'm' },
    }).ok,
  );
  t.notOk(
    checkMessage(ControlMessageSchema, { type: 'reply', id: '1', ok: false }).ok,
    'a failed reply needs its error',
  );
  t.ok(
    checkMessage(ControlMessageSchema, {
      type: 'proxy_decision',
      route: null,
      outcome: 'refused',
      status: 403,
      code: 'ERR_PROXY_ROUTE_DENIED',
    }).ok,
  );
  t.ok(
    checkMessage(ControlRequestSchema, {
      id: '1',
      type: 'start',
      spec: { session_id: 's', user_id: 1, tokens: {}, placeholders: {}, agent_env: {} },
    }).ok,
  );
  t.notOk(checkMessage(ControlRequestSchema, { id: '1', type: 'start' }).ok, 'start needs a spec');
  t.notOk(
    checkMessage(SessionProfileSchema, {
      version: 2,
      session_id: 's',
      proxy: { host: '127.0.0.1', port: 1 },
      routes: [],
    }).ok,
  );
  const mcp = checkMessage(McpToolResultSchema, { content: [{ type: 'image', data: 'AAA', mimeType: 'image/png' }] });
  t.ok(mcp.ok && mcp.msg.content[0].data === 'AAA', 'content items keep their fields');
  t.notOk(checkMessage(McpToolResultSchema, { content: 'text' }).ok);
  // Unknown fields are dropped, not refused: a newer peer may add one.
  const extra = checkMessage(ChildInboundSchema, { type: 'cancel', turn_id: 't', added_later: true });
  t.same(extra.ok && extra.msg, { type: 'cancel', turn_id: 't' });
});

t.test('writeMessage writes one line and reports a closed stream', async (t) => {
  const s = new PassThrough();
  let out = '';
  s.on('data', (d: Buffer) => (out += d.toString()));
  t.equal(writeMessage<ChildInbound>(s, { type: 'cancel', turn_id: 'x' }), true);
  await new Promise((r) => setImmediate(r));
  t.equal(out, '{"type":"cancel","turn_id":"x"}\n');
  s.destroy();
  t.equal(writeMessage<ChildInbound>(s, { type: 'cancel', turn_id: 'x' }), false);
});
