import { pino, type Logger, type DestinationStream } from 'pino';

export type { Logger };

/** Header and field paths that never reach a log line. */
export const REDACT_PATHS = [
  'authorization',
  'cookie',
  'password',
  'token',
  'secret',
  '*.authorization',
  '*.cookie',
  '*.password',
  '*.password_hash',
  '*.token',
  '*.access_token',
  '*.refresh_token',
  '*.secret',
  '*["proxy-authorization"]',
  '*["set-cookie"]',
  '*["x-csrf-token"]',
  // Headers objects one level down under any key (pino-http's req/res, an upstream response):
  // not only req.headers and res.headers, so a logged `{ upstream: { headers } }` is covered too.
  '*.headers.authorization',
  '*.headers.cookie',
  '*.headers["proxy-authorization"]',
  '*.headers["set-cookie"]',
  '*.headers["x-csrf-token"]',
];

/**
 * Errors in logs: kind, code and message (and the same of their cause), never a stack trace
 * (docs/architecture.md#http-error-body: no stack trace, token or SQL text in a log). Messages are cut at 500 characters.
 */
export function errSerializer(e: unknown, depth = 0): unknown {
  if (!(e instanceof Error)) return typeof e === 'string' ? e.slice(0, 500) : e;
  const out: Record<string, unknown> = { type: e.name, message: String(e.message).slice(0, 500) };
  const code = (e as { code?: unknown }).code;
  if (typeof code === 'string' || typeof code === 'number') out.code = code;
  const cause = (e as { cause?: unknown }).cause;
  if (cause !== undefined && depth < 2) out.cause = errSerializer(cause, depth + 1);
  return out;
}

export interface LoggerOptions {
  level?: string;
  /** Where lines go; defaults to stdout (stderr for processes whose stdout is a protocol). */
  destination?: DestinationStream | NodeJS.WritableStream;
  name?: string;
}

/** pino, JSON lines, with secrets redacted. */
export function createLogger(opts: LoggerOptions = {}): Logger {
  return pino(
    {
      level: opts.level ?? 'info',
      name: opts.name,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      serializers: { err: (e: unknown) => errSerializer(e), error: (e: unknown) => errSerializer(e) },
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    (opts.destination as DestinationStream | undefined) ?? pino.destination(1),
  );
}

/** A logger that drops everything (tests, library defaults). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
