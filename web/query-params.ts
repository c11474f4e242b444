import type { NextFunction, Request, Response } from 'express';
import { AppError, type ErrorCode } from '../core/index.js';

/**
 * Strict reading of query strings (docs/api.md, Query parameters): an integer is digits only,
 * without a leading zero ("0" itself where 0 is allowed), within its range; a parameter given
 * twice (`?limit=1&limit=2`) or in brackets (`?user_id[]=2`, `?user_id[x]=2`) is refused with
 * 400, never read as another value or silently ignored.
 */

const INT_RE = /^(0|[1-9][0-9]{0,14})$/;

/** A strictly written integer from `min` to `max`, or undefined when `raw` does not say one. */
export function strictInt(raw: unknown, min: number, max: number): number | undefined {
  if (typeof raw !== 'string' || !INT_RE.test(raw)) return undefined;
  const n = Number(raw);
  return n >= min && n <= max ? n : undefined;
}

export interface IntParamOptions {
  min?: number;
  max?: number;
  /** The code of the area (ERR_VALIDATION, ERR_DATA_INVALID, …). */
  code?: ErrorCode;
}

/**
 * The integer query parameter `name` (undefined when absent or empty); anything else than one
 * strictly written integer in range is 400 with `code`.
 */
export function intQueryParam(req: Request, name: string, o: IntParamOptions = {}): number | undefined {
  const v = req.query[name];
  if (v === undefined || v === '') return undefined;
  const min = o.min ?? 0;
  const max = o.max ?? Number.MAX_SAFE_INTEGER;
  const n = strictInt(v, min, max);
  if (n === undefined)
    throw new AppError(
      o.code ?? 'ERR_VALIDATION',
      `${name}: must be one integer from ${min} to ${max} (digits, no leading zero)`,
      { details: { field: name } },
    );
  return n;
}

/** Every /api request: a query key written as an array or object (`a[]=`, `a[b]=`) is refused. */
export function refuseQueryArrays(req: Request, _res: Response, next: NextFunction): void {
  for (const key of Object.keys(req.query)) {
    if (key.includes('[') || key.includes(']')) {
      return next(
        new AppError(
          'ERR_VALIDATION',
          `query parameter ${JSON.stringify(key.slice(0, 40))}: arrays and objects are not accepted; give one value`,
          { details: { field: key.slice(0, 40) } },
        ),
      );
    }
  }
  next();
}
