import { Ajv, type ValidateFunction, type ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { AppError } from '../core/index.js';

// ajv-formats ships CJS; under NodeNext its default export is the module object.
const addFormats = (addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule;

/**
 * One ajv instance for request bodies: unknown keys removed only where a schema says so.
 * `verbose` keeps each error's schema, so a `pattern` error can say what the field takes
 * (its `description`) instead of printing the regular expression.
 */
export const ajv = new Ajv({ allErrors: true, strict: true, coerceTypes: false, useDefaults: true, verbose: true });
(addFormats as unknown as (a: Ajv) => void)(ajv);

const cache = new WeakMap<object, ValidateFunction>();

/** The schema's compiled validator (compiled once per schema object). */
export function compiled(schema: object): ValidateFunction {
  let fn = cache.get(schema);
  if (!fn) {
    fn = ajv.compile(schema);
    cache.set(schema, fn);
  }
  return fn;
}

/** One problem of a request body: `field` is a dotted path (`row_filter.all.1.column`), `message` is for people. */
export interface Problem {
  field: string;
  message: string;
}

/** Validate `data` against a JSON schema; throws 400 ERR_VALIDATION naming the field and the reason. */
export function validateBody<T>(schema: object, data: unknown): T {
  const fn = compiled(schema);
  if (!fn(data)) throw validationError(fn.errors ?? []);
  return data as T;
}

/**
 * ajv's errors as an ERR_VALIDATION AppError for people: `details.problems` lists each bad field once
 * with a plain reason ("Name must not be empty.", "\"colour\" is not a known field of the row
 * filter."), and the message is the first of them (plus how many more). Errors of the branches
 * of anyOf/oneOf that the value plainly did not take are dropped (see `pickProblems`).
 */
export function validationError(errors: ErrorObject[]): AppError {
  return problemsError(pickProblems(errors));
}

/** An ERR_VALIDATION AppError from a list of people-readable problems. */
export function problemsError(problems: Problem[]): AppError {
  const list = problems.length ? problems : [{ field: '', message: 'The request body is not valid.' }];
  const more = list.length > 1 ? ` (and ${list.length - 1} more problem${list.length > 2 ? 's' : ''})` : '';
  return new AppError('ERR_VALIDATION', `${list[0].message}${more}`, { details: { field: list[0].field, problems: list.slice(0, 10) } });
}

/** "display_name" → "Display name"; "row_filter.all.1.column" → "Row filter, condition 2: column". */
export function fieldLabel(field: string): string {
  if (!field) return 'The request body';
  const parts = field.split('.');
  const words: string[] = [];
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i];
    if ((p === 'all' || p === 'any') && /^[0-9]+$/.test(parts[i + 1] ?? '')) {
      words.push(`condition ${Number(parts[i + 1]) + 1}`);
      i++;
    } else if (/^[0-9]+$/.test(p)) words.push(`item ${Number(p) + 1}`);
    else words.push(p.replace(/_/g, ' '));
  }
  const text = words.join(', ');
  return text.charAt(0).toUpperCase() + text.slice(1);
}

const TYPE_WORDS: Record<string, string> = {
  string: 'a text',
  number: 'a number',
  integer: 'a whole number',
  boolean: 'true or false',
  array: 'a list',
  object: 'an object',
  null: 'null',
};
const FORMAT_WORDS: Record<string, string> = { email: 'an e-mail address', uri: 'a URL (https://…)', 'date-time': 'a date and time' };

function pathOf(e: ErrorObject): string {
  return e.instancePath.replace(/^\//, '').replace(/\//g, '.');
}

function problemOf(e: ErrorObject): Problem {
  const base = pathOf(e);
  const p = e.params as Record<string, unknown>;
  const label = fieldLabel(base);
  const n = (k: string) => Number(p[k]);
  switch (e.keyword) {
    case 'required': {
      const field = [base, String(p.missingProperty)].filter(Boolean).join('.');
      return { field, message: `${fieldLabel(field)} is required.` };
    }
    case 'additionalProperties': {
      const field = [base, String(p.additionalProperty)].filter(Boolean).join('.');
      return { field, message: `"${String(p.additionalProperty)}" is not a known field${base ? ` of ${label.toLowerCase()}` : ''}.` };
    }
    case 'minLength':
      return { field: base, message: n('limit') <= 1 ? `${label} must not be empty.` : `${label} is too short: at least ${n('limit')} characters.` };
    case 'maxLength':
      return { field: base, message: `${label} is too long: at most ${n('limit')} characters.` };
    case 'pattern': {
      const hint = (e.parentSchema as { description?: string } | undefined)?.description;
      return { field: base, message: hint ? `${label}: ${hint}.` : `${label} has characters that are not allowed.` };
    }
    case 'type':
      return { field: base, message: `${label} must be ${String(p.type).split(',').map((t) => TYPE_WORDS[t] ?? t).join(' or ')}.` };
    case 'enum':
      return { field: base, message: `${label} must be one of: ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}.` };
    case 'const':
      return { field: base, message: `${label} must be ${JSON.stringify(p.allowedValue)}.` };
    case 'format':
      return { field: base, message: `${label} must be ${FORMAT_WORDS[String(p.format)] ?? `in ${String(p.format)} format`}.` };
    case 'minItems':
      return { field: base, message: `${label} needs at least ${n('limit')} item${n('limit') === 1 ? '' : 's'}.` };
    case 'maxItems':
      return { field: base, message: `${label} has too many items: at most ${n('limit')}.` };
    case 'uniqueItems':
      return { field: base, message: `${label} lists the same item twice.` };
    case 'minimum':
      return { field: base, message: `${label} must be at least ${n('limit')}.` };
    case 'maximum':
      return { field: base, message: `${label} must be at most ${n('limit')}.` };
    case 'minProperties':
      return { field: base, message: base ? `${label} must not be empty.` : 'Nothing to change: send at least one field.' };
    case 'maxProperties':
      return { field: base, message: `${label} has too many fields.` };
    default:
      return { field: base, message: `${label} is not valid.` };
  }
}

/**
 * The errors worth showing. ajv reports every branch of an anyOf/oneOf: for `{ anyOf: [text,
 * null] }` and "" it says "must NOT have fewer than 1 characters", "must be null" and "must
 * match a schema in anyOf". Kept: errors that are not about the union itself, and of the type
 * errors only those whose field has no other error (the value had a type some branch takes).
 */
export function pickProblems(errors: ErrorObject[]): Problem[] {
  const specific = errors.filter((e) => e.keyword !== 'anyOf' && e.keyword !== 'oneOf' && e.keyword !== 'if');
  const byPath = new Map<string, ErrorObject[]>();
  for (const e of specific) byPath.set(pathOf(e), [...(byPath.get(pathOf(e)) ?? []), e]);
  const kept: ErrorObject[] = [];
  for (const [, list] of byPath) {
    const other = list.filter((e) => e.keyword !== 'type');
    if (other.length) kept.push(...other);
    else {
      // Several type errors for one field (one per branch): say every type it may have, once.
      const types = [...new Set(list.flatMap((e) => String((e.params as { type: string }).type).split(',')))];
      kept.push({ ...list[0], params: { type: types.join(',') } });
    }
  }
  // An error under a union's branch leaves no error at the union's own path; fall back to it.
  const out = (kept.length ? kept : errors).map(problemOf);
  // One reason per field: "" breaks minLength and the pattern; "must not be empty" says it.
  const seen = new Set<string>();
  return out.filter((p) => {
    if (seen.has(p.field)) return false;
    seen.add(p.field);
    return true;
  });
}
