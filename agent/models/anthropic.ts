import type { ModelAdapter, ModelReply, ModelRequest, Message, ToolCall } from '../types.js';
import { ModelError } from '../types.js';
import { joinUrl, parseArgs, parseJson, postSse } from './http.js';

export const ANTHROPIC_VERSION = '2023-06-01';
const MAX_TOKENS = 4096;

/**
 * Anthropic Messages with streaming tool use. POST {baseUrl}/v1/messages, `stream: true`;
 * the base URL is the API root (https://api.anthropic.com). x-api-key carries the proxy's
 * placeholder.
 */
export class AnthropicModel implements ModelAdapter {
  readonly name: string;
  constructor(private readonly opts: { baseUrl: string; model: string; apiKey?: string; timeoutMs: number }) {
    this.name = `anthropic:${opts.model}`;
  }

  async complete(req: ModelRequest, onText: (t: string) => void): Promise<ModelReply> {
    const body: Record<string, unknown> = {
      model: this.opts.model,
      max_tokens: MAX_TOKENS,
      stream: true,
      system: req.system,
      messages: toWire(req.messages),
    };
    if (req.tools.length) body.tools = req.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema }));
    const headers: Record<string, string> = { 'anthropic-version': ANTHROPIC_VERSION };
    if (this.opts.apiKey) headers['x-api-key'] = this.opts.apiKey;
    let text = '';
    const blocks = new Map<number, { id: string; name: string; json: string }>();
    let stopped = false;
    for await (const ev of postSse(joinUrl(this.opts.baseUrl, '/v1/messages'), headers, body, req.signal, this.opts.timeoutMs)) {
      const j = parseJson(ev.data);
      switch (j.type) {
        case 'content_block_start':
          if (j.content_block?.type === 'tool_use') blocks.set(j.index, { id: j.content_block.id, name: j.content_block.name, json: '' });
          else if (j.content_block?.type === 'text' && j.content_block.text) {
            text += j.content_block.text;
            onText(j.content_block.text);
          }
          break;
        case 'content_block_delta':
          if (j.delta?.type === 'text_delta' && typeof j.delta.text === 'string') {
            text += j.delta.text;
            onText(j.delta.text);
          } else if (j.delta?.type === 'input_json_delta') {
            const b = blocks.get(j.index);
            if (!b) throw new ModelError('ERR_MODEL_STREAM', 'input_json_delta for an unknown content block');
            b.json += j.delta.partial_json ?? '';
          }
          break;
        case 'error':
          throw new ModelError('ERR_MODEL_STREAM', `the model reported an error mid-stream (${String(j.error?.type ?? 'error')})`);
        case 'message_stop':
          stopped = true;
          break;
        default:
          // message_start, ping, content_block_stop, message_delta: nothing to keep.
          break;
      }
      if (stopped) break;
    }
    if (!stopped) throw new ModelError('ERR_MODEL_STREAM', 'the model stream ended early');
    const toolCalls: ToolCall[] = [...blocks.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([, b]) => ({ id: b.id, name: b.name, input: parseArgs(b.json, b.name) }));
    return { text, toolCalls };
  }
}

type Block = Record<string, unknown>;

/** Map the neutral conversation to alternating user/assistant messages (consecutive same-role turns merged). */
function toWire(messages: readonly Message[]): { role: 'user' | 'assistant'; content: Block[] }[] {
  const out: { role: 'user' | 'assistant'; content: Block[] }[] = [];
  const push = (role: 'user' | 'assistant', blocks: Block[]) => {
    if (!blocks.length) return;
    const last = out[out.length - 1];
    if (last && last.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const m of messages) {
    if (m.role === 'user') push('user', [{ type: 'text', text: m.content }]);
    else if (m.role === 'tool') push('user', [{ type: 'tool_result', tool_use_id: m.callId, content: m.content, ...(m.isError ? { is_error: true } : {}) }]);
    else
      push('assistant', [
        ...(m.text ? [{ type: 'text', text: m.text }] : []),
        ...m.toolCalls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: c.input })),
      ]);
  }
  // tool_result blocks must come first in a user message.
  for (const m of out) {
    if (m.role === 'user') m.content.sort((a, b) => Number(b.type === 'tool_result') - Number(a.type === 'tool_result'));
  }
  return out;
}
