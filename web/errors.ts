import type { ErrorRequestHandler, RequestHandler } from 'express';
import { AppError } from '../core/index.js';
import { isConnectionError } from '../domain/db/index.js';

/** 404 for API paths nobody handled. */
export const notFound: RequestHandler = (req, _res, next) => {
  next(new AppError('ERR_NOT_FOUND', `no route for ${req.method} ${req.path}`));
};

/**
 * The one place errors become HTTP responses: the error body `{"error":{"code","message"}}`
 * (docs/architecture.md#contracts) with the status the error catalogue gives the code; never a stack trace,
 * token or SQL text. Unknown errors are logged (kind, code and message; the logger never
 * writes a stack) and answered as 500 ERR_INTERNAL.
 */
export const errorMiddleware: ErrorRequestHandler = (err, req, res, _next) => {
  const e = normalise(err);
  if (e.status >= 500) req.log?.error({ err, code: e.code }, 'request failed');
  else req.log?.info({ code: e.code, status: e.status }, 'request refused');
  if (res.headersSent) {
    // A stream already started: the route owns its own ending; just close.
    res.end();
    return;
  }
  if (e.code === 'ERR_DB_UNAVAILABLE') res.setHeader('Retry-After', '5');
  res.status(e.status).json(e.toBody());
};

function normalise(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const type = (err as { type?: string }).type;
  if (type === 'entity.parse.failed') return new AppError('ERR_VALIDATION', 'body is not valid JSON');
  if (type === 'entity.too.large') return new AppError('ERR_BODY_TOO_LARGE', 'request body too large');
  // 415 has a code of its own (it was ERR_VALIDATION with 415, which disagreed with the catalogue).
  if (type === 'encoding.unsupported' || type === 'charset.unsupported')
    return new AppError('ERR_BODY_ENCODING', 'unsupported body encoding');
  // The database went away (PostgreSQL restarting, network): retryable, nothing was half-written
  // (every multi-row change runs in one transaction). The service resumes when it answers again.
  if (isConnectionError(err))
    return new AppError('ERR_DB_UNAVAILABLE', 'the database does not answer; try again shortly', { retryable: true });
  return new AppError('ERR_INTERNAL', 'internal error', { cause: err });
}
