import { errorStatus, type ErrorCode } from './error-codes/index.js';

/**
 * Coded errors. Every error that crosses a module boundary is an AppError with a
 * stable `code` (ERR_<AREA>_<WHAT>, listed in core/error-codes/) and the HTTP `status` the
 * catalogue gives that code.
 */
export interface AppErrorOptions {
  /**
   * Only for a code read from another process's message (`appErrorFromPeer`): the status when
   * the catalogue does not know the code (a newer peer). A catalogued code always answers with
   * its catalogue status; there is no way to pass a status of one's own (a unit test checks).
   */
  unknownCodeStatus?: number;
  retryable?: boolean;
  cause?: unknown;
  /** Extra fields safe to show to the caller (never secrets), e.g. `{ field }` of ERR_VALIDATION. */
  details?: Record<string, unknown>;
}

/**
 * The one error class. What used to be ValidationError, NotFoundError, AuthError and
 * ConflictError is `new AppError(code, message)`: the code says what went wrong, the catalogue
 * says its status (ERR_VALIDATION 400, ERR_*_NOT_FOUND 404, …).
 */
export class AppError extends Error {
  readonly code: string;
  readonly status: number;
  readonly retryable: boolean;
  readonly details?: Record<string, unknown>;

  /**
   * `code` is an `ErrorCode`; any string is accepted for codes read from a peer's message
   * (a code the catalogue does not know answers `unknownCodeStatus`, else 500).
   */
  constructor(code: ErrorCode | (string & {}), message: string, opts: AppErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'AppError';
    this.code = code;
    this.status = errorStatus(code, opts.unknownCodeStatus ?? 500);
    this.retryable = opts.retryable ?? false;
    if (opts.details) this.details = opts.details;
  }

  /** The HTTP error body: `{"error":{"code","message",…details}}` (docs/architecture.md#contracts). */
  toBody(): { error: { code: string; message: string } & Record<string, unknown> } {
    return { error: { code: this.code, message: this.message, ...(this.details ?? {}) } };
  }
}

/** An invalid configuration (ERR_CONFIG_INVALID): the message and `details.problems` list every problem. */
export function configError(problems: string[]): AppError {
  return new AppError('ERR_CONFIG_INVALID', `invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`, {
    details: { problems },
  });
}

/** The problems of an ERR_CONFIG_INVALID error (none for another error). */
export function configProblems(err: AppError): string[] {
  const problems = err.details?.problems;
  return Array.isArray(problems) ? problems.filter((p): p is string => typeof p === 'string') : [];
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
  return new AppError(error.code, error.message, { unknownCodeStatus: fallbackStatus });
}

export function isAppError(err: unknown, code?: string): err is AppError {
  return err instanceof AppError && (code === undefined || err.code === code);
}
