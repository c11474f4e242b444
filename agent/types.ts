import { AppError } from '../core/errors.js';
import type { ErrorCode } from '../core/error-codes/index.js';
import type { TranscriptItem, TranscriptToolCall, TurnUsage } from '../core/transcript.js';

/** A tool call the model asked for. */
export type ToolCall = TranscriptToolCall;

/** The conversation, provider-neutral (core/transcript.ts); adapters map it to their wire format. */
export type Message = TranscriptItem;

/** One image part, provider-neutral. */
export interface ImagePart {
  /** The upload's path as the message names it (uploads/photo.png). */
  name: string;
  mediaType: 'image/png' | 'image/jpeg';
  /** The file's bytes, base64. */
  data: string;
}

/** What goes with one user message: its images, and a note for each one left out. */
export interface MessageImages {
  parts: ImagePart[];
  notes: string[];
}

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
  /** For a model that takes image input: the images each user message attaches (agent/images.ts). */
  images?: ReadonlyMap<Message, MessageImages>;
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

/**
 * Coded model failures: ERR_MODEL_HTTP, ERR_MODEL_AUTH, ERR_MODEL_STREAM, ERR_MODEL_TIMEOUT, ERR_MODEL_UNREACHABLE, ERR_MODEL_SDK.
 * The one AppError subclass that stays: it carries the provider's answer status and headers
 * for the retry policy (agent/models/), which must not go into `details` (details are
 * shown to callers); its status, like every AppError's, is the code's catalogue entry.
 */
export class ModelError extends AppError {
  /** The provider's HTTP status and headers, when it answered with an error status (for retries). */
  upstreamStatus?: number;
  upstreamHeaders?: Headers;
  constructor(code: ErrorCode, message: string, cause?: unknown) {
    super(code, message, { cause });
    this.name = 'ModelError';
  }
}
