import { errorStatus, type ErrorCode } from './error-codes/index.js';

/**
 * Coded errors. Every error that crosses a module boundary is an AppError with a
 * stable `code` (ERR_<AREA>_<WHAT>, listed in core/error-codes/) and the HTTP `status` the
 * catalogue gives that code.
 */
export interface AppErrorOptions {
  /**
   * @deprecated The status comes from the error catalogue (core/error-codes/). Still honoured
   * so older call sites compile; the catalogue test fails when one disagrees with the catalogue.
   */
  status?: number;
  retryable?: boolean;
  cause?: unknown;
  /** Extra fields safe to show to the caller (never secrets). */
  details?: Record<string, unknown>;
}

export class AppError extends Error {
  readonly code: string;
  readonly status: number;
  readonly retryable: boolean;
  readonly details?: Record<string, unknown>;

  /**
   * `code` is an `ErrorCode`; any string is accepted for codes read from a peer's message
   * (a code the catalogue does not know answers 500).
   */
  constructor(code: ErrorCode | (string & {}), message: string, opts: AppErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'AppError';
    this.code = code;
    this.status = opts.status ?? errorStatus(code);
    this.retryable = opts.retryable ?? false;
    if (opts.details) this.details = opts.details;
  }

  /** The HTTP error body: `{"error":{"code","message",…details}}` (docs/architecture.md#contracts). */
  toBody(): { error: { code: string; message: string } & Record<string, unknown> } {
    return { error: { code: this.code, message: this.message, ...(this.details ?? {}) } };
  }
}

export class ValidationError extends AppError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('ERR_VALIDATION', message, { details });
    this.name = 'ValidationError';
  }
}

/** A missing thing: the catalogue's status of `code` (404 for a code it does not know). */
export class NotFoundError extends AppError {
  constructor(code: ErrorCode | (string & {}), message: string) {
    super(code, message, { status: errorStatus(code, 404) });
    this.name = 'NotFoundError';
  }
}

/** Not authenticated: the catalogue's status of `code` (401 for a code it does not know). */
export class AuthError extends AppError {
  constructor(code: ErrorCode | (string & {}), message: string, status = errorStatus(code, 401)) {
    super(code, message, { status });
    this.name = 'AuthError';
  }
}

/** A conflict with the current state: the catalogue's status of `code` (409 for a code it does not know). */
export class ConflictError extends AppError {
  constructor(code: ErrorCode | (string & {}), message: string, details?: Record<string, unknown>) {
    super(code, message, { status: errorStatus(code, 409), details });
    this.name = 'ConflictError';
  }
}

export class ConfigError extends AppError {
  readonly problems: string[];
  constructor(problems: string[]) {
    super('ERR_CONFIG_INVALID', `invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** Wrap anything thrown into an AppError, keeping the original as `cause`. */
export function toAppError(err: unknown, fallbackCode: ErrorCode | (string & {}) = 'ERR_INTERNAL'): AppError {
  if (err instanceof AppError) return err;
  return new AppError(fallbackCode, 'internal error', { cause: err });
}

/**
 * An error another process reported (`{code, message}` read from a socket): the status comes
 * from the catalogue, `fallbackStatus` for a code it does not know (a newer peer). Use this
 * instead of guessing a status from the code.
 */
export function appErrorFromPeer(error: { code: string; message: string }, fallbackStatus = 502): AppError {
  return new AppError(error.code, error.message, { status: errorStatus(error.code, fallbackStatus) });
}

export function isAppError(err: unknown, code?: string): err is AppError {
  return err instanceof AppError && (code === undefined || err.code === code);
}
