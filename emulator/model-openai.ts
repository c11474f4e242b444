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
import { openAiWireProblem } from './model-wire.js';

export type { ModelServer, ModelServerOptions, ModelStep } from './model-script.js';

/**
 * An OpenAI-compatible Chat Completions server (POST /v1/chat/completions) that plays a
 * script: streamed text deltas and streamed tool_calls (id + name first, then the
 * arguments in pieces), `finish_reason` "tool_calls" or "stop", then `data: [DONE]`.
 * Non-streaming requests get the same reply as one `chat.completion` object.
 * `url` is the base URL clients use (ends in /v1), like https://api.openai.com/v1.
 */
const shape: ProviderShape = {
  paths: ['/v1/chat/completions'],
  baseSuffix: '/v1',
  authorized(req, key) {
    return req.headers.authorization === `Bearer ${key}`;
  },
  wireProblem: openAiWireProblem,
  sendError(res, status, type, message, headers = {}) {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify({ error: { message, type, param: null, code: null } }));
  },
  async play(step, body, req, res) {
    const id = `chatcmpl-${randomUUID()}`;
    const model = String(body.model ?? 'scripted');
    const created = Math.floor(Date.now() / 1000);
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;

    if (step.kind === 'reply' && body.stream !== true) {
      const calls = (step.tool_calls ?? []).map((c) => ({
        id: c.id ?? `call_${randomUUID().slice(0, 8)}`,
        type: 'function',
        function: { name: c.name, arguments: JSON.stringify(c.arguments) },
      }));
      const text = chunksOf(step.text).join('');
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id,
          object: 'chat.completion',
          created,
          model,
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: text || null, ...(calls.length ? { tool_calls: calls } : {}) },
              finish_reason: calls.length ? 'tool_calls' : 'stop',
            },
          ],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      );
      return;
    }

    startSse(res);
    res.write(chunk({ role: 'assistant', content: '' }));
    if (step.kind === 'malformed') {
      res.write(chunk({ content: 'partial ' }));
      res.write('data: {"id": "broken", "choices": [ {"delta": \n\n');
      res.end();
      return;
    }
    if (step.kind === 'stream_error') {
      // As OpenAI-compatible servers report a failure after the headers: an `error` object as the data.
      res.write(
        `data: ${JSON.stringify({ error: { message: step.message ?? 'The server is overloaded', type: step.type ?? 'server_error', param: null, code: null } })}\n\n`,
      );
      res.end();
      return;
    }
    if (step.kind === 'stall') {
      if (step.text) res.write(chunk({ content: step.text }));
      await untilClosed(req, res);
      return;
    }
    if (step.kind !== 'reply') return;
    for (const piece of chunksOf(step.text)) res.write(chunk({ content: piece }));
    const calls = step.tool_calls ?? [];
    calls.forEach((c, index) => {
      const callId = c.id ?? `call_${randomUUID().slice(0, 8)}`;
      res.write(
        chunk({ tool_calls: [{ index, id: callId, type: 'function', function: { name: c.name, arguments: '' } }] }),
      );
      for (const p of jsonPieces(c.arguments))
        res.write(chunk({ tool_calls: [{ index, function: { arguments: p } }] }));
    });
    res.write(chunk({}, calls.length ? 'tool_calls' : 'stop'));
    // stream_options.include_usage: a last chunk with no choices and the call's token counts.
    if (body.stream_options?.include_usage === true) {
      const prompt = Math.ceil(JSON.stringify(body.messages ?? []).length / 4);
      const completion = Math.ceil((chunksOf(step.text).join('').length + JSON.stringify(calls).length) / 4);
      res.write(
        `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } })}\n\n`,
      );
    }
    res.write('data: [DONE]\n\n');
    res.end();
  },
};

/** Start the fake on 127.0.0.1:0. */
export function start(opts: ModelServerOptions = {}): Promise<ModelServer> {
  return startModelServer(shape, opts);
}
