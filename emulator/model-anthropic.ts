import { randomUUID } from 'node:crypto';
import {
  chunksOf,
  jsonPieces,
  startModelServer,
  startSse,
  untilClosed,
  type ModelServer,
  type ModelServerOptions,
  type ProviderShape,
} from './model-script.js';
import { anthropicWireProblem } from './model-wire.js';

export type { ModelServer, ModelServerOptions, ModelStep } from './model-script.js';

/**
 * An Anthropic Messages server (POST /v1/messages) that plays a script as the real API
 * streams it: message_start, content_block_start/delta/stop (text_delta, or tool_use with
 * input_json_delta pieces), message_delta with stop_reason "tool_use" or "end_turn",
 * message_stop (a request without `stream: true` gets the whole Message as JSON). Checks the key
 * (x-api-key, or Authorization: Bearer as the SDK 1.x sends it) when told one; `url` is the base URL
 * (like https://api.anthropic.com, without /v1).
 */
const shape: ProviderShape = {
  paths: ['/v1/messages'],
  baseSuffix: '',
  authorized(req, key) {
    // The API takes the key as x-api-key or, as the SDK 1.x sends it, Authorization: Bearer.
    return req.headers['x-api-key'] === key || req.headers.authorization === `Bearer ${key}`;
  },
  wireProblem: anthropicWireProblem,
  sendError(res, status, type, message, headers = {}) {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify({ type: 'error', error: { type, message } }));
  },
  async play(step, body, req, res) {
    const model = String(body.model ?? 'scripted');
    if (step.kind === 'reply' && body.stream !== true) {
      const content = [
        ...(chunksOf(step.text).length ? [{ type: 'text', text: chunksOf(step.text).join('') }] : []),
        ...(step.tool_calls ?? []).map((c) => ({
          type: 'tool_use',
          id: c.id ?? `toolu_${randomUUID().replace(/-/g, '').slice(0, 24)}`,
          name: c.name,
          input: c.arguments,
        })),
      ];
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: `msg_${randomUUID().replace(/-/g, '').slice(0, 24)}`,
          type: 'message',
          role: 'assistant',
          model,
          content,
          stop_reason: step.tool_calls?.length ? 'tool_use' : 'end_turn',
          stop_sequence: null,
          usage: { input_tokens: 1, output_tokens: 1 },
        }),
      );
      return;
    }
    const ev = (name: string, data: Record<string, unknown>) =>
      res.write(`event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`);
    startSse(res);
    ev('message_start', {
      message: {
        id: `msg_${randomUUID().replace(/-/g, '').slice(0, 24)}`,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: Math.ceil(JSON.stringify(body.messages ?? []).length / 4), output_tokens: 1 },
      },
    });
    ev('ping', {});
    if (step.kind === 'malformed') {
      ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
      res.write(
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_de\n\n',
      );
      res.end();
      return;
    }
    if (step.kind === 'stream_error') {
      res.write(
        `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: step.type ?? 'overloaded_error', message: step.message ?? 'Overloaded' } })}\n\n`,
      );
      res.end();
      return;
    }
    if (step.kind === 'stall') {
      if (step.text) {
        ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
        ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: step.text } });
      }
      await untilClosed(req, res);
      return;
    }
    if (step.kind !== 'reply') return;
    let index = 0;
    const text = chunksOf(step.text);
    if (text.length) {
      ev('content_block_start', { index, content_block: { type: 'text', text: '' } });
      for (const t of text) ev('content_block_delta', { index, delta: { type: 'text_delta', text: t } });
      ev('content_block_stop', { index });
      index++;
    }
    for (const c of step.tool_calls ?? []) {
      const id = c.id ?? `toolu_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
      ev('content_block_start', { index, content_block: { type: 'tool_use', id, name: c.name, input: {} } });
      ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: '' } });
      for (const p of jsonPieces(c.arguments))
        ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: p } });
      ev('content_block_stop', { index });
      index++;
    }
    ev('message_delta', {
      delta: { stop_reason: step.tool_calls?.length ? 'tool_use' : 'end_turn', stop_sequence: null },
      usage: { output_tokens: 5 },
    });
    ev('message_stop', {});
    res.end();
  },
};

/** Start the fake on 127.0.0.1:0. */
export function start(opts: ModelServerOptions = {}): Promise<ModelServer> {
  return startModelServer(shape, opts);
}
