import type { default as OpenAI } from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import type { ModelAdapter, ModelReply, ModelRequest, Message, ToolCall } from '../types.js';
import { ModelError } from '../types.js';
import { lazyModule, parseArgs, withRetries, type SdkErrors } from './sdk.js';

/** The SDK, loaded after the agent is ready (sdk.ts says why). */
type OpenAiModule = typeof import('openai');
const sdk = lazyModule<OpenAiModule>('openai');

/**
 * OpenAI-compatible Chat Completions (OpenAI, vLLM, Ollama, llama.cpp server) through the official
 * `openai` client: `chat.completions.stream()` parses the server-sent events and assembles the
 * streamed tool calls (split arguments, interleaved parallel calls by index). The base URL
 * includes the version (https://api.openai.com/v1); the bearer is the proxy's placeholder.
 */
export class OpenAiModel implements ModelAdapter {
  readonly name: string;
  private client: OpenAI | undefined;
  private errors: SdkErrors | undefined;
  constructor(private readonly opts: { baseUrl: string; model: string; apiKey?: string; timeoutMs: number }) {
    this.name = `openai:${opts.model}`;
    sdk.warm();
  }

  private async ready(): Promise<{ client: OpenAI; errors: SdkErrors }> {
    if (!this.client) {
      const m = await sdk.load();
      this.client = new m.OpenAI({
        baseURL: this.opts.baseUrl,
        // The SDK insists on a key; a keyless local server ignores the header.
        apiKey: this.opts.apiKey ?? 'none',
        maxRetries: 0, // ours are bounded by the stall timeout (sdk.ts)
        timeout: this.opts.timeoutMs,
        logLevel: 'off', // its logger would print unparsable stream data (model output)
      });
      this.errors = { APIError: m.APIError, APIUserAbortError: m.APIUserAbortError, APIConnectionError: m.APIConnectionError };
    }
    return { client: this.client, errors: this.errors! };
  }

  async complete(req: ModelRequest, onText: (t: string) => void): Promise<ModelReply> {
    const { client, errors } = await this.ready();
    const messages: ChatCompletionMessageParam[] = [{ role: 'system', content: req.system }, ...req.messages.map(toWire)];
    const tools: ChatCompletionTool[] = req.tools.map((t) => ({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: t.inputSchema },
    }));
    const final = await withRetries(errors, req.signal, this.opts.timeoutMs, async (dog) => {
      const stream = client.chat.completions.stream(
        { model: this.opts.model, messages, ...(tools.length ? { tools } : {}) },
        { signal: dog.signal },
      );
      for await (const chunk of stream) {
        dog.progress();
        const piece = chunk.choices[0]?.delta?.content;
        if (piece) onText(piece);
      }
      return stream.finalChatCompletion();
    });
    const msg = final.choices[0]?.message;
    if (!msg) throw new ModelError('ERR_MODEL_STREAM', 'the model sent no choice');
    const toolCalls: ToolCall[] = (msg.tool_calls ?? []).map((c, i) => {
      if (c.type !== 'function' || !c.function.name) throw new ModelError('ERR_MODEL_STREAM', 'the model sent a tool call without a name');
      return { id: c.id || `call_${i}`, name: c.function.name, input: parseArgs(c.function.arguments, c.function.name) };
    });
    return { text: msg.content ?? '', toolCalls };
  }
}

function toWire(m: Message): ChatCompletionMessageParam {
  if (m.role === 'user') return { role: 'user', content: m.content };
  if (m.role === 'tool') return { role: 'tool', tool_call_id: m.callId, content: m.content };
  return {
    role: 'assistant',
    content: m.text || null,
    ...(m.toolCalls.length
      ? { tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: JSON.stringify(c.input) } })) }
      : {}),
  };
}
