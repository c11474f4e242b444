/**
 * Coded errors. Every error that crosses a module boundary is an AppError with a
 * stable `code` (ERR_<AREA>_<WHAT>) and the HTTP `status` it maps to.
 */
export interface AppErrorOptions {
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

  constructor(code: string, message: string, opts: AppErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'AppError';
    this.code = code;
    this.status = opts.status ?? 500;
    this.retryable = opts.retryable ?? false;
    if (opts.details) this.details = opts.details;
  }

  /** The DESIGN.md error body. */
  toBody(): { error: { code: string; message: string } & Record<string, unknown> } {
    return { error: { code: this.code, message: this.message, ...(this.details ?? {}) } };
  }
}

export class ValidationError extends AppError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('ERR_VALIDATION', message, { status: 400, details });
    this.name = 'ValidationError';
  }
}

export class NotFoundError extends AppError {
  constructor(code: string, message: string) {
    super(code, message, { status: 404 });
    this.name = 'NotFoundError';
  }
}

export class AuthError extends AppError {
  constructor(code: string, message: string, status = 401) {
    super(code, message, { status });
    this.name = 'AuthError';
  }
}

export class ConflictError extends AppError {
  constructor(code: string, message: string, details?: Record<string, unknown>) {
    super(code, message, { status: 409, details });
    this.name = 'ConflictError';
  }
}

export class ConfigError extends AppError {
  readonly problems: string[];
  constructor(problems: string[]) {
    super('ERR_CONFIG_INVALID', `invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`, {
      status: 500,
    });
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** Wrap anything thrown into an AppError, keeping the original as `cause`. */
export function toAppError(err: unknown, fallbackCode = 'ERR_INTERNAL'): AppError {
  if (err instanceof AppError) return err;
  return new AppError(fallbackCode, 'internal error', { status: 500, cause: err });
}

export function isAppError(err: unknown, code?: string): err is AppError {
  return err instanceof AppError && (code === undefined || err.code === code);
}
