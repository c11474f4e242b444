import type { AgentSettings } from '../env.js';
import type { ModelAdapter } from '../types.js';
import { AnthropicModel } from './anthropic.js';
import { DemoModel } from './demo.js';
import { OpenAiModel } from './openai.js';

export function createModel(s: AgentSettings): ModelAdapter {
  if (s.provider === 'demo') return new DemoModel();
  const bounds = {
    connectMs: s.modelConnectTimeoutMs,
    firstByteMs: s.modelFirstByteTimeoutMs,
    stallMs: s.modelTimeoutMs,
    retries: s.modelRetries,
    retryAfterMaxMs: s.modelRetryAfterMaxMs,
  };
  const opts = { baseUrl: s.baseUrl!, model: s.model, apiKey: s.apiKey, bounds };
  return s.provider === 'anthropic' ? new AnthropicModel(opts) : new OpenAiModel(opts);
}

export { AnthropicModel, DemoModel, OpenAiModel };
