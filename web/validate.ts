import { z } from 'zod';
import { AppError, type ErrorCode } from '../core/index.js';

/**
 * Request bodies are checked with zod at the HTTP edge (docs/architecture.md#validation): each
 * route has a zod schema, `validateBody(schema, body)` answers its parsed output (the request
 * type is `z.output<typeof schema>`, never a cast), and a body that does not fit answers 400
 * ERR_VALIDATION with `field` and `problems: [{field, message}]`, each message written for
 * people ("Name must not be empty.", "\"colour\" is not a known field of the row filter.").
 *
 * Conventions the messages rely on: a `.regex(re, hint)` gives its hint ("Name: letters, digits,
 * _ . and - only."); a refinement's message is a whole sentence.
 */

/** One problem of a request body: `field` is a dotted path (`row_filter.all.1.column`), `message` is for people. */
export interface Problem {
  field: string;
  message: string;
}

/** Parse `data` with `schema`; throws 400 ERR_VALIDATION (or `code`) naming the field and the reason. */
export function validateBody<S extends z.ZodType>(
  schema: S,
  data: unknown,
  code: ErrorCode = 'ERR_VALIDATION',
): z.output<S> {
  const r = schema.safeParse(data);
  if (r.success) return r.data;
  throw problemsError(zodProblems(r.error.issues, data), code);
}

/** An ERR_VALIDATION AppError (or `code`) from a list of people-readable problems. */
export function problemsError(problems: Problem[], code: ErrorCode = 'ERR_VALIDATION'): AppError {
  const list = problems.length ? problems : [{ field: '', message: 'The request body is not valid.' }];
  const more = list.length > 1 ? ` (and ${list.length - 1} more problem${list.length > 2 ? 's' : ''})` : '';
  return new AppError(code, `${list[0].message}${more}`, {
    details: { field: list[0].field, problems: list.slice(0, 10) },
  });
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
  int: 'a whole number',
  boolean: 'true or false',
  array: 'a list',
  object: 'an object',
  record: 'an object',
  null: 'null',
};
const FORMAT_WORDS: Record<string, string> = {
  email: 'an e-mail address',
  url: 'a URL (https://…)',
  datetime: 'a date and time',
};

type Issue = z.core.$ZodIssue;

function pathOf(path: readonly PropertyKey[]): string {
  return path.map(String).join('.');
}

/** The value at `path` in `data` (undefined when a step is missing). */
function valueAt(data: unknown, path: readonly PropertyKey[]): unknown {
  let v: unknown = data;
  for (const k of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[k];
  }
  return v;
}

function sizeProblem(i: Issue & { code: 'too_small' | 'too_big' }, field: string, label: string): Problem {
  const n = Number(i.code === 'too_small' ? i.minimum : i.maximum);
  if (i.code === 'too_small') {
    if (i.origin === 'string')
      return {
        field,
        message: n <= 1 ? `${label} must not be empty.` : `${label} is too short: at least ${n} characters.`,
      };
    if (i.origin === 'array') return { field, message: `${label} needs at least ${n} item${n === 1 ? '' : 's'}.` };
    return { field, message: `${label} must be at least ${n}.` };
  }
  if (i.origin === 'string') return { field, message: `${label} is too long: at most ${n} characters.` };
  if (i.origin === 'array') return { field, message: `${label} has too many items: at most ${n}.` };
  return { field, message: `${label} must be at most ${n}.` };
}

/** One issue as problems for people (an unknown-keys issue gives one per key). */
function problemsOf(i: Issue, data: unknown, prefix: readonly PropertyKey[] = []): Problem[] {
  const path = [...prefix, ...i.path];
  const field = pathOf(path);
  const label = fieldLabel(field);
  switch (i.code) {
    case 'invalid_type':
      if (path.length && valueAt(data, path) === undefined) return [{ field, message: `${label} is required.` }];
      return [{ field, message: `${label} must be ${TYPE_WORDS[i.expected] ?? i.expected}.` }];
    case 'unrecognized_keys':
      return i.keys.map((k) => ({
        field: [field, k].filter(Boolean).join('.'),
        message: `"${k}" is not a known field${field ? ` of ${label.toLowerCase()}` : ''}.`,
      }));
    case 'too_small':
    case 'too_big':
      return [sizeProblem(i, field, label)];
    case 'invalid_format':
      if (i.format === 'regex')
        return [
          {
            field,
            message: i.message.startsWith('Invalid')
              ? `${label} has characters that are not allowed.`
              : `${label}: ${i.message}.`,
          },
        ];
      return [{ field, message: `${label} must be ${FORMAT_WORDS[i.format] ?? `in ${i.format} format`}.` }];
    case 'invalid_value':
      return [
        {
          field,
          message:
            i.values.length === 1
              ? `${label} must be ${JSON.stringify(i.values[0])}.`
              : `${label} must be one of: ${i.values.map((v) => JSON.stringify(v)).join(', ')}.`,
        },
      ];
    case 'invalid_union':
      return unionProblems(i, data, path);
    case 'custom':
      return [{ field, message: i.message }];
    default:
      return [{ field, message: `${label} is not valid.` }];
  }
}

/**
 * A value no branch of a union took. When every branch failed on the type ("" for a number or
 * null), say every type the field may have, once; otherwise the value had a type some branch
 * takes, and that branch's problems are the ones worth showing ("Name must not be empty.").
 */
function unionProblems(i: Issue & { code: 'invalid_union' }, data: unknown, path: readonly PropertyKey[]): Problem[] {
  const field = pathOf(path);
  const typeOnly = (branch: Issue[]) => branch.every((b) => b.code === 'invalid_type' && b.path.length === 0);
  const taken = i.errors.find((branch) => branch.length && !typeOnly(branch));
  if (taken) return taken.flatMap((b) => problemsOf(b, data, path));
  const types = [
    ...new Set(
      i.errors.flatMap((branch) =>
        branch.map((b) => (b.code === 'invalid_type' ? (TYPE_WORDS[b.expected] ?? b.expected) : 'valid')),
      ),
    ),
  ];
  if (!types.length) return [{ field, message: `${fieldLabel(field)} is not valid.` }];
  return [{ field, message: `${fieldLabel(field)} must be ${types.join(' or ')}.` }];
}

/** zod's issues as problems for people: each field once, with its first reason. */
export function zodProblems(issues: readonly Issue[], data: unknown): Problem[] {
  const seen = new Set<string>();
  return issues
    .flatMap((i) => problemsOf(i, data))
    .filter((p) => {
      if (seen.has(p.field)) return false;
      seen.add(p.field);
      return true;
    });
}

/** A non-empty object: a PATCH that changes nothing is refused ("Nothing to change: send at least one field."). */
export function atLeastOneField<S extends z.ZodType<Record<string, unknown>>>(schema: S): S {
  return schema.refine((v) => Object.keys(v).length > 0, { message: 'Nothing to change: send at least one field.' });
}

/** A list without repeats (JSON Schema's uniqueItems). */
export function uniqueList<S extends z.ZodType<unknown[]>>(schema: S, label: string): S {
  return schema.refine((v) => new Set(v.map((x) => JSON.stringify(x))).size === v.length, {
    message: `${label} lists the same item twice.`,
  });
}
