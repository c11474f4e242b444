import type { ModelAdapter, ModelReply, ModelRequest, Message, ToolCall } from '../types.js';
import { ModelError } from '../types.js';
import { joinUrl, parseArgs, parseJson, postSse } from './http.js';

/**
 * OpenAI-compatible Chat Completions with streaming tool calls (OpenAI, vLLM, Ollama,
 * llama.cpp server). POST {baseUrl}/chat/completions, `stream: true`; the base URL includes
 * the version (https://api.openai.com/v1). The bearer is the proxy's placeholder.
 */
export class OpenAiModel implements ModelAdapter {
  readonly name: string;
  constructor(private readonly opts: { baseUrl: string; model: string; apiKey?: string; timeoutMs: number }) {
    this.name = `openai:${opts.model}`;
  }

  async complete(req: ModelRequest, onText: (t: string) => void): Promise<ModelReply> {
    const body: Record<string, unknown> = {
      model: this.opts.model,
      stream: true,
      messages: [{ role: 'system', content: req.system }, ...req.messages.map(toWire)],
    };
    if (req.tools.length) {
      body.tools = req.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.inputSchema } }));
    }
    const headers: Record<string, string> = {};
    if (this.opts.apiKey) headers.authorization = `Bearer ${this.opts.apiKey}`;
    let text = '';
    const calls: { id: string; name: string; args: string }[] = [];
    let finished = false;
    for await (const ev of postSse(joinUrl(this.opts.baseUrl, '/chat/completions'), headers, body, req.signal, this.opts.timeoutMs)) {
      if (ev.data === '[DONE]') {
        finished = true;
        break;
      }
      const j = parseJson(ev.data);
      if (j.error) throw new ModelError('ERR_MODEL_STREAM', `the model reported an error mid-stream (${String(j.error.type ?? j.error.code ?? 'error')})`);
      const choice = j.choices?.[0];
      if (!choice) continue;
      const delta = choice.delta ?? {};
      if (typeof delta.content === 'string' && delta.content) {
        text += delta.content;
        onText(delta.content);
      }
      for (const tc of delta.tool_calls ?? []) {
        const idx = typeof tc.index === 'number' ? tc.index : calls.length;
        const c = (calls[idx] ??= { id: '', name: '', args: '' });
        if (tc.id) c.id = tc.id;
        if (tc.function?.name) c.name += tc.function.name;
        if (typeof tc.function?.arguments === 'string') c.args += tc.function.arguments;
      }
      if (choice.finish_reason) finished = true;
    }
    if (!finished) throw new ModelError('ERR_MODEL_STREAM', 'the model stream ended early');
    const toolCalls: ToolCall[] = calls
      .filter((c) => c)
      .map((c, i) => {
        if (!c.name) throw new ModelError('ERR_MODEL_STREAM', 'the model sent a tool call without a name');
        return { id: c.id || `call_${i}`, name: c.name, input: parseArgs(c.args, c.name) };
      });
    return { text, toolCalls };
  }
}

function toWire(m: Message): Record<string, unknown> {
  if (m.role === 'user') return { role: 'user', content: m.content };
  if (m.role === 'tool') return { role: 'tool', tool_call_id: m.callId, content: m.content };
  const out: Record<string, unknown> = { role: 'assistant', content: m.text || null };
  if (m.toolCalls.length)
    out.tool_calls = m.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.input) } }));
  return out;
}
