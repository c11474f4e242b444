import { AppError } from '../core/errors.js';
import type { TranscriptItem, TranscriptToolCall, TurnUsage } from '../core/transcript.js';

/** A tool call the model asked for. */
export type ToolCall = TranscriptToolCall;

/** The conversation, provider-neutral (core/transcript.ts); adapters map it to their wire format. */
export type Message = TranscriptItem;

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
  /** Tokens the provider counted for this call, when it said. */
  usage?: TurnUsage;
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
