import { AppError } from '../core/errors.js';

/** A tool call the model asked for. */
export interface ToolCall {
  id: string;
  name: string;
  input: Record<string, unknown>;
}

/** The conversation, provider-neutral; adapters map it to their wire format. */
export type Message =
  | { role: 'user'; content: string }
  | { role: 'assistant'; text: string; toolCalls: ToolCall[] }
  | { role: 'tool'; callId: string; name: string; content: string; isError: boolean };

/** A tool as offered to the model. */
export interface ToolDef {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

export interface ModelRequest {
  system: string;
  messages: readonly Message[];
  tools: readonly ToolDef[];
  signal: AbortSignal;
  /** A retry the chat should show ("the model is not answering, retrying (1 of 3)…"; agent/models/sdk.ts). */
  onStatus?: (s: { text: string; attempt: number; of: number }) => void;
}

export interface ModelReply {
  text: string;
  toolCalls: ToolCall[];
}

/** One model call: streams text through onText, resolves with the whole reply. */
export interface ModelAdapter {
  readonly name: string;
  complete(req: ModelRequest, onText: (text: string) => void): Promise<ModelReply>;
}

/** Coded model failures: ERR_MODEL_HTTP, ERR_MODEL_AUTH, ERR_MODEL_STREAM, ERR_MODEL_TIMEOUT, ERR_MODEL_UNREACHABLE, ERR_MODEL_SDK. */
export class ModelError extends AppError {
  /** The provider's HTTP status and headers, when it answered with an error status (for retries). */
  upstreamStatus?: number;
  upstreamHeaders?: Headers;
  constructor(code: string, message: string, cause?: unknown) {
    super(code, message, { status: 502, cause });
    this.name = 'ModelError';
  }
}
