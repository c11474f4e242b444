import type { ErrorRequestHandler, RequestHandler } from 'express';
import { AppError } from '../core/index.js';

/** 404 for API paths nobody handled. */
export const notFound: RequestHandler = (req, _res, next) => {
  next(new AppError('ERR_NOT_FOUND', `no route for ${req.method} ${req.path}`, { status: 404 }));
};

/**
 * The one place errors become HTTP responses: the DESIGN.md body, never a stack trace,
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
  res.status(e.status).json(e.toBody());
};

function normalise(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const type = (err as { type?: string }).type;
  if (type === 'entity.parse.failed') return new AppError('ERR_VALIDATION', 'body is not valid JSON', { status: 400 });
  if (type === 'entity.too.large') return new AppError('ERR_BODY_TOO_LARGE', 'request body too large', { status: 413 });
  if (type === 'encoding.unsupported' || type === 'charset.unsupported')
    return new AppError('ERR_VALIDATION', 'unsupported body encoding', { status: 415 });
  return new AppError('ERR_INTERNAL', 'internal error', { status: 500, cause: err });
}
