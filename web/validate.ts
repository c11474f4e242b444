import { Ajv, type ValidateFunction, type ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { ValidationError } from '../core/index.js';

// ajv-formats ships CJS; under NodeNext its default export is the module object.
const addFormats = (addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule;

/** One ajv instance for request bodies: unknown keys removed only where a schema says so. */
export const ajv = new Ajv({ allErrors: true, strict: true, coerceTypes: false, useDefaults: true });
(addFormats as unknown as (a: Ajv) => void)(ajv);

const cache = new WeakMap<object, ValidateFunction>();

/** Validate `data` against a JSON schema; throws 400 ERR_VALIDATION naming the first bad field. */
export function validateBody<T>(schema: object, data: unknown): T {
  let fn = cache.get(schema);
  if (!fn) {
    fn = ajv.compile(schema);
    cache.set(schema, fn);
  }
  if (!fn(data)) throw validationError(fn.errors ?? []);
  return data as T;
}

export function validationError(errors: ErrorObject[]): ValidationError {
  const e = errors[0];
  const field = fieldOf(e);
  const message = e ? `${field || 'body'}: ${e.message ?? 'is invalid'}` : 'invalid body';
  return new ValidationError(message, {
    field,
    problems: errors.slice(0, 10).map((x) => ({ field: fieldOf(x), message: x.message ?? 'is invalid' })),
  });
}

function fieldOf(e: ErrorObject | undefined): string {
  if (!e) return '';
  const base = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
  const extra =
    (e.params as { missingProperty?: string; additionalProperty?: string }).missingProperty ??
    (e.params as { additionalProperty?: string }).additionalProperty;
  return [base, extra].filter(Boolean).join('.');
}
