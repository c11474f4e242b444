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
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["proxy-authorization"]',
  'req.headers["x-csrf-token"]',
  'res.headers["set-cookie"]',
];

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
