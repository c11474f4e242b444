import type { Request } from 'express';
import { AppError } from '../../core/index.js';

/** A positive integer path parameter (`:id`, `:userId`); ERR_VALIDATION otherwise. Shared by the identity admin route files. */
export const intParam = (req: Request, name: string): number => {
  const v = Number(req.params[name]);
  if (!Number.isSafeInteger(v) || v < 1) throw new AppError('ERR_VALIDATION', `${name} must be a positive integer`);
  return v;
};
