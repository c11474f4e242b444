import type { default as Anthropic } from '@anthropic-ai/sdk';
import type { MessageParam, Tool } from '@anthropic-ai/sdk/resources/messages';
import type { MessageImages, ModelAdapter, ModelReply, ModelRequest, Message, ToolCall } from '../types.js';
import { interruptionNote } from '../../core/transcript.js';
import { ModelError } from '../types.js';
import { withNotes } from '../images.js';
import { clientBounds, lazyClient, lazyModule, withRetries, type ModelBounds, type SdkErrors } from './sdk.js';

const MAX_TOKENS = 4096;

/** The SDK, loaded after the agent is ready (sdk.ts says why). */
type AnthropicModule = typeof import('@anthropic-ai/sdk');
const sdk = lazyModule<AnthropicModule>('@anthropic-ai/sdk');

/**
 * Anthropic Messages with streaming tool use through the official `@anthropic-ai/sdk` client:
 * `messages.stream()` parses the events and assembles each tool_use block's input from its
 * input_json_delta pieces. The base URL is the API root (https://api.anthropic.com); x-api-key
 * carries the proxy's placeholder; anthropic-version is the SDK's own.
 */
export class AnthropicModel implements ModelAdapter {
  readonly name: string;
  private readonly ready: () => Promise<{ client: Anthropic; errors: SdkErrors }>;
  constructor(private readonly opts: { baseUrl: string; model: string; apiKey?: string; bounds: ModelBounds }) {
    this.name = `anthropic:${opts.model}`;
    const key = opts.apiKey ?? 'none';
    this.ready = lazyClient(sdk, (m) => {
      return new m.Anthropic({
        baseURL: opts.baseUrl,
        // Explicit, so the SDK never looks for credentials in the environment or config files.
        apiKey: key,
        // The SDK (1.x) sends the key as `Authorization: Bearer`; the sandbox proxy's Anthropic
        // route checks and swaps `x-api-key` (which the API accepts too), so send that instead.
        defaultHeaders: { authorization: null, 'x-api-key': key },
        ...clientBounds(opts.bounds),
      });
    });
    sdk.warm();
  }

  async complete(req: ModelRequest, onText: (t: string) => void): Promise<ModelReply> {
    const { client, errors } = await this.ready();
    const tools: Tool[] = req.tools.map((t) => ({
      name: t.name,
      description: t.description,
      input_schema: t.inputSchema as Tool.InputSchema,
    }));
    const final = await withRetries(
      errors,
      req.signal,
      this.opts.bounds,
      async (dog) => {
        const stream = client.messages.stream(
          {
            model: this.opts.model,
            max_tokens: MAX_TOKENS,
            system: req.system,
            messages: toWire(req.messages, req.images),
            ...(tools.length ? { tools } : {}),
          },
          { signal: dog.signal },
        );
        for await (const ev of stream) {
          dog.progress();
          if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta' && ev.delta.text) {
            dog.output();
            onText(ev.delta.text);
          }
        }
        const final = await stream.finalMessage();
        dog.ended();
        return final;
      },
      req.onStatus,
    );
    let text = '';
    const toolCalls: ToolCall[] = [];
    for (const b of final.content) {
      if (b.type === 'text') text += b.text;
      else if (b.type === 'tool_use') {
        const input = b.input;
        if (!input || typeof input !== 'object' || Array.isArray(input))
          throw new ModelError('ERR_MODEL_STREAM', `the model sent non-object arguments for ${b.name}`);
        toolCalls.push({ id: b.id, name: b.name, input: input as Record<string, unknown> });
      }
    }
    return {
      text,
      toolCalls,
      usage: { input_tokens: final.usage.input_tokens, output_tokens: final.usage.output_tokens },
    };
  }
}

type Block = Record<string, unknown>;

/**
 * A tool-call id as the Messages API takes it (^[a-zA-Z0-9_-]+$): ids another provider made (a
 * chat may switch models) keep their letters, anything else becomes `_`, the same on both sides.
 */
export function anthropicToolId(id: string): string {
  const s = id.replace(/[^a-zA-Z0-9_-]/g, '_');
  return s || 'call';
}

/** Map the neutral conversation to alternating user/assistant messages (consecutive same-role turns merged). */
function toWire(messages: readonly Message[], images?: ReadonlyMap<Message, MessageImages>): MessageParam[] {
  const out: { role: 'user' | 'assistant'; content: Block[] }[] = [];
  const push = (role: 'user' | 'assistant', blocks: Block[]) => {
    if (!blocks.length) return;
    const last = out[out.length - 1];
    if (last && last.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const m of messages) {
    if (m.role === 'user') {
      // Image input: each image as a base64 image block, then the text (the Messages API's advice).
      const img = images?.get(m);
      push('user', [
        ...(img?.parts ?? []).map((p) => ({
          type: 'image',
          source: { type: 'base64', media_type: p.mediaType, data: p.data },
        })),
        { type: 'text', text: withNotes(m.content, img) },
      ]);
    } else if (m.role === 'tool')
      push('user', [
        {
          type: 'tool_result',
          tool_use_id: anthropicToolId(m.callId),
          content: m.content,
          ...(m.isError ? { is_error: true } : {}),
        },
      ]);
    else {
      // An empty or whitespace-only text block is refused by the API; a stopped answer says so.
      const text = (
        m.interrupted ? `${m.text}${m.text ? '\n\n' : ''}${interruptionNote(m.interrupted)}` : m.text
      ).trimEnd();
      push('assistant', [
        ...(text ? [{ type: 'text', text }] : []),
        ...m.toolCalls.map((c) => ({ type: 'tool_use', id: anthropicToolId(c.id), name: c.name, input: c.input })),
      ]);
    }
  }
  // tool_result blocks must come first in a user message.
  for (const m of out) {
    if (m.role === 'user')
      m.content.sort((a, b) => Number(b.type === 'tool_result') - Number(a.type === 'tool_result'));
  }
  return out as unknown as MessageParam[];
}
