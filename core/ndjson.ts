/**
 * Newline-delimited JSON over a stream: one object per line, UTF-8. Every reader is given the
 * zod schema of the messages it accepts and checks each line against it before any code sees
 * it, so data read from a socket or a child's stdout is never cast. A line that is not JSON,
 * does not match the schema, or grows past MAX_LINE_BYTES is rejected with a coded
 * AppError (ERR_PROTOCOL_*; its payload is never put in the error or a log line).
 *
 * Used on every sandbox boundary: daemon ⇄ supervisor (control socket), supervisor ⇄ agent
 * child (stdin/stdout), and the CLI ⇄ daemon operator control socket. No I/O besides the
 * stream it is handed; no imports above core/.
 */
import type { Readable, Writable } from 'node:stream';
import type { z } from 'zod';
import type { ErrorCode } from './error-codes/index.js';
import { AppError } from './errors.js';

export const MAX_LINE_BYTES = 4 * 1024 * 1024;

export type ProtocolErrorCode = 'ERR_PROTOCOL_BAD_JSON' | 'ERR_PROTOCOL_BAD_MESSAGE' | 'ERR_PROTOCOL_LINE_TOO_LONG';

/**
 * A rejected line is an AppError with an ERR_PROTOCOL_* code (status 400 from the catalogue).
 * `details.issues` names the failing fields and what was expected (zod paths and messages),
 * never the received values, so it is safe to log; `details.request_id` is the `id` of a
 * rejected request when it had a string one (so a reply can still be matched).
 */
export function protocolError(
  code: ProtocolErrorCode,
  message: string,
  issues: string[] = [],
  requestId?: string,
): AppError {
  return new AppError(code, message, {
    details: { issues, ...(requestId !== undefined ? { request_id: requestId } : {}) },
  });
}

/** The failing fields of a protocol rejection (none for another error). */
export function protocolIssues(err: AppError): string[] {
  const issues = err.details?.issues;
  return Array.isArray(issues) ? issues.filter((i): i is string => typeof i === 'string') : [];
}

/** The `id` of the request a protocol rejection was about, when it could be read. */
export function rejectedRequestId(err: AppError): string | undefined {
  const id = err.details?.request_id;
  return typeof id === 'string' ? id : undefined;
}

/** Fields of a rejection that may go into a log line: code, channel, the failing paths. */
export function protocolLogFields(err: AppError, channel: string): Record<string, unknown> {
  const issues = protocolIssues(err);
  return { channel, code: err.code, ...(issues.length ? { issues: issues.slice(0, 5) } : {}) };
}

/**
 * Check one parsed value against a schema. Returns the typed message or a protocol rejection;
 * never throws. Issue texts carry paths and expectations only (zod's messages name the
 * expected and received types, not the values).
 */
export function checkMessage<T>(
  schema: z.ZodType<T>,
  value: unknown,
): { ok: true; msg: T } | { ok: false; err: AppError } {
  const r = schema.safeParse(value);
  if (r.success) return { ok: true, msg: r.data };
  const issues = r.error.issues.slice(0, 10).map((i) => `${i.path.map(String).join('.') || '(root)'}: ${i.code}`);
  return {
    ok: false,
    err: protocolError('ERR_PROTOCOL_BAD_MESSAGE', 'message does not match the protocol', issues, requestIdOf(value)),
  };
}

/**
 * Check data read from an HTTP body or an engine's API (not a line on a sandbox channel)
 * against its schema; a mismatch throws an AppError with `code`, naming the failing fields and
 * never their values.
 */
export function checkAnswer<T>(schema: z.ZodType<T>, value: unknown, code: ErrorCode, what: string): T {
  const r = checkMessage(schema, value);
  if (r.ok) return r.msg;
  throw new AppError(code, `${what} has an unexpected shape (${protocolIssues(r.err).join(', ')})`);
}

/** Parse one line (already split) and check it. */
export function parseLine<T>(schema: z.ZodType<T>, line: string): { ok: true; msg: T } | { ok: false; err: AppError } {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return { ok: false, err: protocolError('ERR_PROTOCOL_BAD_JSON', 'line is not JSON') };
  }
  return checkMessage(schema, value);
}

function requestIdOf(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || !('id' in value)) return undefined;
  return typeof value.id === 'string' ? value.id : undefined;
}

export interface LineReader {
  /** Stop reading: later data (even the rest of the current chunk) is ignored. */
  stop(): void;
}

export interface ReadMessagesOptions<T> {
  schema: z.ZodType<T>;
  onMessage(msg: T): void;
  /** Called for each rejected line. Required: a rejection is always seen (and should be logged). */
  onReject(err: AppError): void;
}

/** Read `input` as NDJSON; every line is checked against `schema` before `onMessage` sees it. */
export function readMessages<T>(input: Readable, opts: ReadMessagesOptions<T>): LineReader {
  let buf = '';
  let stopped = false;
  input.setEncoding('utf8');
  const onData = (chunk: string) => {
    if (stopped) return;
    buf += chunk;
    let i: number;
    while (!stopped && (i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (!line.trim()) continue;
      const r = parseLine(opts.schema, line);
      if (r.ok) opts.onMessage(r.msg);
      else opts.onReject(r.err);
    }
    if (buf.length > MAX_LINE_BYTES) {
      buf = '';
      opts.onReject(protocolError('ERR_PROTOCOL_LINE_TOO_LONG', `line longer than ${MAX_LINE_BYTES} bytes`));
    }
  };
  input.on('data', onData);
  return {
    stop: () => {
      stopped = true;
      buf = '';
      input.off('data', onData);
    },
  };
}

/**
 * Write one message as a line; false when the stream is gone. Typed: pass the message type
 * so the compiler checks what goes out as the schema checks what comes in.
 */
export function writeMessage<T>(out: Writable, msg: T): boolean {
  if (out.destroyed || !out.writable) return false;
  out.write(JSON.stringify(msg) + '\n');
  return true;
}

/**
 * Messages written in one tick leave as one write: the reader is woken once for them, not once
 * per line (each wake-up of another process costs the writer ~0.1 ms on a busy 2-core host; a
 * model reply's text pieces and the turn's end usually come in one tick). The lines go out at
 * the end of the tick (process.nextTick), in order. `flush()` sends what waits at once: call it
 * before ending the stream or handing it to something else, and on process exit.
 */
export class LineWriter<T> {
  private pending: string[] = [];
  constructor(private readonly out: Writable) {}

  /** Queue one message; false when the stream is gone (nothing queued). */
  write(msg: T): boolean {
    if (this.out.destroyed || !this.out.writable) return false;
    if (this.pending.push(JSON.stringify(msg) + '\n') === 1) process.nextTick(() => this.flush());
    return true;
  }

  flush(): void {
    if (!this.pending.length) return;
    const data = this.pending.length === 1 ? this.pending[0] : this.pending.join('');
    this.pending = [];
    if (!this.out.destroyed && this.out.writable) this.out.write(data);
  }
}
