/**
 * A running tool's streamed output (`tool_progress`, docs/chat.md#tool-progress): run_python's
 * stdout and stderr, shown under the call while it runs. Not stored: the call's end replaces it
 * with the result.
 */
import type { ChatEvent } from '../../chat-api.js';

/** Largest live text kept per call (the oldest is dropped first). */
const LIVE_MAX_CHARS = 64 * 1024;

/** A tool call in an answer; `live` is its streamed output while it runs. */
export interface ToolPart {
  kind: 'tool';
  call_id: string;
  tool: string;
  input: unknown;
  status: 'running' | 'ok' | 'failed' | 'cancelled' | 'interrupted';
  output?: unknown;
  error?: string;
  duration_ms?: number;
  live?: string;
}

type ProgressEvent = Extract<ChatEvent, { type: 'tool_progress' }>;

/** The part's live text with this event's appended (stderr lines are kept as they come). */
export function appendLive(live: string | undefined, e: ProgressEvent): string {
  const next = (live ?? '') + e.text;
  return next.length > LIVE_MAX_CHARS ? next.slice(next.length - LIVE_MAX_CHARS) : next;
}

/** The live output box under a running call. */
export function LiveOutput({ text }: { text?: string }) {
  if (!text) return null;
  return (
    <pre class="tool-live" aria-live="polite" data-live="1">
      {text}
    </pre>
  );
}
