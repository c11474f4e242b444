import type { Request, Router } from 'express';
import { z } from 'zod';
import { AppError } from '../core/index.js';
import {
  createBudget,
  deleteBudget,
  listBudgets,
  updateBudget,
  usageCsv,
  usageCurrency,
  usageReport,
  utcDay,
  type UsageQuery,
} from '../domain/usage/index.js';
import type { BudgetList, BudgetView, UsageReportView } from './admin-api.js';
import { asyncHandler, type WebContext } from './context.js';
import { noContent, parseFields, superuserRouter } from './route-kit.js';

const DAY_RE = /^\d{4}-\d{2}-\d{2}$/;
const MAX_DAYS = 366;

function badQuery(field: string, message: string): AppError {
  return new AppError('ERR_USAGE_BAD_QUERY', `${field}: ${message}`, { details: { field } });
}

/** A query parameter given once as text (undefined: absent). */
function one(req: Request, name: string): string | undefined {
  const v = req.query[name];
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string') throw badQuery(name, 'give it once');
  return v;
}

function dayParam(req: Request, name: string, fallback: string): string {
  const v = one(req, name) ?? fallback;
  // A real calendar day: 2026-02-30 is refused, not rolled over.
  if (!DAY_RE.test(v) || Number.isNaN(Date.parse(`${v}T00:00:00Z`)) || utcDay(new Date(`${v}T00:00:00Z`)) !== v)
    throw badQuery(name, 'must be a UTC date YYYY-MM-DD');
  return v;
}

function choice<T extends string>(req: Request, name: string, options: readonly T[], fallback: T): T {
  const v = one(req, name) ?? fallback;
  if (!options.includes(v as T)) throw badQuery(name, `must be one of ${options.join(', ')}`);
  return v as T;
}

/** ?from=&to=&group=user|team|model&period=day|month (docs/usage.md "Report"): defaults the last 30 UTC days, by user, per day. */
function usageQuery(req: Request): UsageQuery {
  const today = utcDay(new Date());
  const to = dayParam(req, 'to', today);
  const from = dayParam(req, 'from', utcDay(new Date(Date.parse(`${to}T00:00:00Z`) - 29 * 86_400_000)));
  if (from > to) throw badQuery('from', 'must not be after to');
  if ((Date.parse(to) - Date.parse(from)) / 86_400_000 >= MAX_DAYS)
    throw badQuery('from', `at most ${MAX_DAYS} days from to`);
  return {
    from,
    to,
    group: choice(req, 'group', ['user', 'team', 'model'] as const, 'user'),
    period: choice(req, 'period', ['day', 'month'] as const, 'day'),
  };
}

/**
 * /api/admin/usage and /api/admin/usage.csv (superuser): what chat turns used per UTC day or
 * month and per user, team or model, with cost at the models' prices (docs/usage.md "Report").
 */
export function adminUsageRoutes(ctx: WebContext): Router {
  const { r, db } = superuserRouter(ctx);
  r.get(
    '/',
    asyncHandler(async (req, res) => {
      const q = usageQuery(req);
      res.json({ ...q, currency: await usageCurrency(db), rows: await usageReport(db, q) } satisfies UsageReportView);
    }),
  );
  return r;
}

/** GET /api/admin/usage.csv: the same report as CSV (one line per row, a `currency` column). */
export function adminUsageCsvRoutes(ctx: WebContext): Router {
  const { r, db } = superuserRouter(ctx);
  r.get(
    '/',
    asyncHandler(async (req, res) => {
      const q = usageQuery(req);
      const csv = usageCsv(await usageReport(db, q), await usageCurrency(db));
      res.setHeader('Content-Disposition', `attachment; filename="usage-${q.from}-${q.to}-${q.group}-${q.period}.csv"`);
      res.type('text/csv; charset=utf-8').send(csv);
    }),
  );
  return r;
}

const AMOUNT = z.number().min(0).max(1e15);
export const BudgetCreateSchema = z
  .object({
    scope: z.enum(['user', 'team']),
    subject_id: z.number().int().min(1),
    metric: z.enum(['tokens', 'cost']),
    period: z.enum(['day', 'month']),
    amount: AMOUNT,
  })
  .strict();
export const BudgetChangeSchema = z.object({ amount: AMOUNT }).strict();

/**
 * /api/admin/budgets (superuser, session + CSRF; docs/usage.md "Budgets"): GET lists every budget
 * with what is used of it in the running period; POST adds one; PATCH /:id changes its amount
 * (counts from the next turn); DELETE /:id removes it. Each change writes its action-log entry.
 */
export function adminBudgetRoutes(ctx: WebContext): Router {
  const { r, db } = superuserRouter(ctx);
  const id = (req: Request) => {
    const n = Number(req.params.id);
    if (!/^[1-9][0-9]{0,14}$/.test(String(req.params.id)))
      throw new AppError('ERR_USAGE_BUDGET_NOT_FOUND', 'no such budget');
    return n;
  };
  r.get(
    '/',
    asyncHandler(async (_req, res) => {
      res.json({ budgets: await listBudgets(db) } satisfies BudgetList);
    }),
  );
  r.post(
    '/',
    asyncHandler(async (req, res) => {
      res
        .status(201)
        .json(
          (await createBudget(
            db,
            req.user!.id,
            parseFields(BudgetCreateSchema, req.body, 'a budget'),
          )) satisfies BudgetView,
        );
    }),
  );
  r.patch(
    '/:id',
    asyncHandler(async (req, res) => {
      const { amount } = parseFields(BudgetChangeSchema, req.body, 'a budget change');
      res.json((await updateBudget(db, req.user!.id, id(req), amount)) satisfies BudgetView);
    }),
  );
  r.delete(
    '/:id',
    noContent((req) => deleteBudget(db, req.user!.id, id(req))),
  );
  return r;
}
