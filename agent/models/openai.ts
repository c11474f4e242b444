import type { default as OpenAI } from 'openai';
import type {
  ChatCompletionChunk,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import type { MessageImages, ModelAdapter, ModelReply, ModelRequest, Message, ToolCall } from '../types.js';
import { interruptionNote } from '../../core/transcript.js';
import { ModelError } from '../types.js';
import { withNotes } from '../images.js';
import {
  clientBounds,
  lazyClient,
  lazyModule,
  parseArgs,
  withRetries,
  type ModelBounds,
  type SdkErrors,
} from './sdk.js';

/** The SDK, loaded after the agent is ready (sdk.ts says why). */
type OpenAiModule = typeof import('openai');
const sdk = lazyModule<OpenAiModule>('openai');

/**
 * OpenAI-compatible Chat Completions (OpenAI, vLLM, Ollama, llama.cpp server) through the official
 * `openai` client: `chat.completions.create({ stream: true })` sends the request and parses the
 * server-sent events into typed chunks (and SDK errors); `Reply` below joins the chunks' deltas
 * into the reply (text, and tool calls split into pieces and interleaved by index). Not the SDK's
 * `chat.completions.stream()` helper: it starts its request from a `setTimeout(0)`, so every model
 * call waited ≥ 1 ms before it left (measured 1.8 ms against 0.5 ms per call for the same request;
 * docs/chat.md). The base URL includes the version (https://api.openai.com/v1); the bearer is the
 * proxy's placeholder.
 */
export class OpenAiModel implements ModelAdapter {
  readonly name: string;
  private readonly ready: () => Promise<{ client: OpenAI; errors: SdkErrors }>;
  constructor(private readonly opts: { baseUrl: string; model: string; apiKey?: string; bounds: ModelBounds }) {
    this.name = `openai:${opts.model}`;
    // The SDK insists on a key; a keyless local server ignores the header.
    this.ready = lazyClient(
      sdk,
      (m) => new m.OpenAI({ baseURL: opts.baseUrl, apiKey: opts.apiKey ?? 'none', ...clientBounds(opts.bounds) }),
    );
    sdk.warm();
  }

  async complete(req: ModelRequest, onText: (t: string) => void): Promise<ModelReply> {
    const { client, errors } = await this.ready();
    const messages: ChatCompletionMessageParam[] = [
      { role: 'system', content: req.system },
      ...req.messages.map((m) => toWire(m, req.images)),
    ];
    const tools: ChatCompletionTool[] = req.tools.map((t) => ({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: t.inputSchema },
    }));
    const reply = await withRetries(
      errors,
      req.signal,
      this.opts.bounds,
      async (dog) => {
        const stream = await client.chat.completions.create(
          {
            model: this.opts.model,
            messages,
            stream: true,
            stream_options: { include_usage: true },
            ...(tools.length ? { tools } : {}),
          },
          { signal: dog.signal },
        );
        const r = new Reply();
        for await (const chunk of stream) {
          dog.progress();
          const piece = r.add(chunk);
          if (piece) {
            dog.output();
            onText(piece);
          }
        }
        // The SDK's stream ends quietly when its request is aborted (a stall, a cancel): say so.
        dog.signal.throwIfAborted();
        dog.ended();
        return r;
      },
      req.onStatus,
    );
    return reply.result();
  }
}

/** Parallel tool calls one reply may carry (the index a chunk gives is checked against it). */
const MAX_TOOL_CALLS = 128;

/** One streamed reply, joined from its chunks the way the API documents (first choice only). */
export class Reply {
  private text = '';
  private readonly calls: { id: string; name: string; args: string }[] = [];
  private finish: string | null = null;
  private choices = 0;
  private usage: ModelReply['usage'];

  /** Take one chunk; returns its text piece, if any. */
  add(chunk: ChatCompletionChunk): string {
    // With stream_options.include_usage the last chunk carries the call's token counts.
    if (chunk.usage)
      this.usage = { input_tokens: chunk.usage.prompt_tokens ?? 0, output_tokens: chunk.usage.completion_tokens ?? 0 };
    const choice = chunk.choices[0];
    if (!choice) return ''; // a usage-only chunk
    this.choices++;
    if (choice.finish_reason) this.finish = choice.finish_reason;
    for (const d of choice.delta?.tool_calls ?? []) {
      if (!Number.isInteger(d.index) || d.index < 0 || d.index >= MAX_TOOL_CALLS)
        throw new ModelError('ERR_MODEL_STREAM', 'the model sent a tool call with a bad index');
      const call = (this.calls[d.index] ??= { id: '', name: '', args: '' });
      if (d.id) call.id = d.id;
      if (d.function?.name) call.name = d.function.name;
      if (d.function?.arguments) call.args += d.function.arguments;
    }
    const piece = choice.delta?.content ?? '';
    this.text += piece;
    return piece;
  }

  /** The reply, once the stream ended; a stream that broke the API's rules is ERR_MODEL_STREAM. */
  result(): ModelReply {
    if (!this.choices) throw new ModelError('ERR_MODEL_STREAM', 'the model sent no choice');
    if (!this.finish) throw new ModelError('ERR_MODEL_STREAM', 'the model stream ended without a finish reason');
    const toolCalls: ToolCall[] = [];
    this.calls.forEach((c, i) => {
      if (!c.name) throw new ModelError('ERR_MODEL_STREAM', 'the model sent a tool call without a name');
      toolCalls.push({ id: c.id || `call_${i}`, name: c.name, input: parseArgs(c.args, c.name) });
    });
    return { text: this.text, toolCalls, ...(this.usage ? { usage: this.usage } : {}) };
  }
}

function toWire(m: Message, images?: ReadonlyMap<Message, MessageImages>): ChatCompletionMessageParam {
  if (m.role === 'user') {
    const img = images?.get(m);
    const text = withNotes(m.content, img);
    // Image input: the text, then each image as a data URL (the Chat Completions content parts).
    if (!img?.parts.length) return { role: 'user', content: text };
    return {
      role: 'user',
      content: [
        { type: 'text', text },
        ...img.parts.map((p) => ({
          type: 'image_url' as const,
          image_url: { url: `data:${p.mediaType};base64,${p.data}` },
        })),
      ],
    };
  }
  if (m.role === 'tool') return { role: 'tool', tool_call_id: m.callId, content: m.content };
  const text = m.interrupted ? `${m.text}${m.text ? '\n\n' : ''}${interruptionNote(m.interrupted)}` : m.text;
  return {
    role: 'assistant',
    content: text || null,
    ...(m.toolCalls.length
      ? {
          tool_calls: m.toolCalls.map((c) => ({
            id: c.id,
            type: 'function' as const,
            function: { name: c.name, arguments: JSON.stringify(c.input) },
          })),
        }
      : {}),
  };
}
