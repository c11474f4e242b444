/**
 * Budgets (docs/usage.md "Budgets"): an admin caps a user's or a team's usage in tokens (input +
 * output) or cost, per UTC day or calendar month. Before a turn starts — before any model call —
 * every budget that applies to the user is checked against `usage_daily`: one used up refuses the
 * turn (429 ERR_USAGE_BUDGET_EXCEEDED); at 80 % the turn's `done` carries a warning. Nothing is
 * cached, so an admin's change counts from the next turn.
 */
import { AppError, type BudgetNotice } from '../../core/index.js';
import type { BudgetView } from '../../core/api-types-admin.js';
import { logAction } from '../action-log.js';
import { inTransaction, nowIso, type Row, type Sql } from '../db/index.js';
import { utcDay } from './record.js';

export type BudgetScope = 'user' | 'team';
export type BudgetMetric = 'tokens' | 'cost';
export type BudgetPeriod = 'day' | 'month';

/** A budget and how much of it is used in the running period (core/api-types-admin.ts: the admin API's shape). */
export type BudgetState = BudgetView;

/** The share of a budget at which a turn's `done` warns. */
export const WARN_RATIO = 0.8;

/** The first UTC day of the period `at` is in. */
export function periodStart(period: BudgetPeriod, at: Date): string {
  const day = utcDay(at);
  return period === 'day' ? day : `${day.slice(0, 7)}-01`;
}

async function used(db: Sql, b: Row<'usage_budgets'>, at: Date): Promise<number> {
  const since = periodStart(b.period, at);
  let q = db.selectFrom('usage_daily').where('day', '>=', since);
  q =
    b.scope === 'user'
      ? q.where('user_id', '=', b.subject_id)
      : q.where('user_id', 'in', db.selectFrom('team_members').select('user_id').where('team_id', '=', b.subject_id));
  const r = await q
    .select((eb) => [
      eb.fn.sum<number | null>('input_tokens').as('i'),
      eb.fn.sum<number | null>('output_tokens').as('o'),
      eb.fn.sum<number | null>('cost').as('c'),
    ])
    .executeTakeFirstOrThrow();
  return b.metric === 'tokens' ? Number(r.i ?? 0) + Number(r.o ?? 0) : Number(r.c ?? 0);
}

async function subjectName(db: Sql, scope: BudgetScope, id: number): Promise<string | null> {
  const r =
    scope === 'user'
      ? await db.selectFrom('users').select('username as name').where('id', '=', id).executeTakeFirst()
      : await db.selectFrom('teams').select('name').where('id', '=', id).executeTakeFirst();
  return r?.name ?? null;
}

async function state(db: Sql, b: Row<'usage_budgets'>, at: Date): Promise<BudgetState> {
  const u = await used(db, b, at);
  const ratio = b.amount > 0 ? u / b.amount : 1;
  return {
    ...b,
    subject: await subjectName(db, b.scope, b.subject_id),
    used: u,
    ratio,
    since: periodStart(b.period, at),
  };
}

/** The budgets that apply to a user (their own and their teams'), with what is used of each. */
export async function budgetsOfUser(db: Sql, userId: number, at = new Date()): Promise<BudgetState[]> {
  const rows = await db
    .selectFrom('usage_budgets')
    .selectAll()
    .where((eb) =>
      eb.or([
        eb.and([eb('scope', '=', 'user'), eb('subject_id', '=', userId)]),
        eb.and([
          eb('scope', '=', 'team'),
          eb('subject_id', 'in', eb.selectFrom('team_members').select('team_id').where('user_id', '=', userId)),
        ]),
      ]),
    )
    .orderBy('id')
    .execute();
  return Promise.all(rows.map((b) => state(db, b, at)));
}

const what = (b: BudgetState) =>
  `${b.scope === 'team' ? `your team's (${b.subject ?? b.subject_id}) ` : 'your '}${b.period === 'day' ? 'daily' : 'monthly'} ${b.metric === 'tokens' ? 'token' : 'cost'} budget`;

/** Before a turn: 429 ERR_USAGE_BUDGET_EXCEEDED when a budget that applies to the user is used up. */
export async function assertWithinBudget(db: Sql, userId: number, at = new Date()): Promise<void> {
  const over = (await budgetsOfUser(db, userId, at)).find((b) => b.ratio >= 1);
  if (!over) return;
  const until = over.period === 'day' ? 'tomorrow (UTC)' : 'next month';
  throw new AppError(
    'ERR_USAGE_BUDGET_EXCEEDED',
    `You have used up ${what(over)}. You can chat again ${until}, or when an administrator raises the budget.`,
    {
      details: {
        budget_id: over.id,
        scope: over.scope,
        metric: over.metric,
        period: over.period,
        amount: over.amount,
        used: round(over.used),
      },
    },
  );
}

/** What a turn's `done` says when a budget of its user is at 80 % or more after it (docs/usage.md). */
export type BudgetWarning = BudgetNotice;

/** The most used budget of the user at WARN_RATIO or more, as a warning (undefined: none). */
export async function budgetWarning(db: Sql, userId: number, at = new Date()): Promise<BudgetWarning | undefined> {
  const top = (await budgetsOfUser(db, userId, at))
    .filter((b) => b.ratio >= WARN_RATIO)
    .sort((a, b) => b.ratio - a.ratio)[0];
  if (!top) return undefined;
  const percent = Math.floor(top.ratio * 100);
  const message =
    top.ratio >= 1
      ? `You have used up ${what(top)}: your next message will be refused.`
      : `You have used ${percent} % of ${what(top)}.`;
  return {
    budget_id: top.id,
    scope: top.scope,
    metric: top.metric,
    period: top.period,
    amount: top.amount,
    used: round(top.used),
    percent,
    message,
  };
}

/** Costs are shown to the millionth of the currency unit; tokens are whole. */
export function round(n: number): number {
  return Math.round(n * 1e6) / 1e6;
}

// ------------------------------------------------------------------ admin CRUD

export interface BudgetInput {
  scope: BudgetScope;
  subject_id: number;
  metric: BudgetMetric;
  period: BudgetPeriod;
  amount: number;
}

const notFound = () => new AppError('ERR_USAGE_BUDGET_NOT_FOUND', 'no such budget');

/** Every budget with what is used of it in its running period. */
export async function listBudgets(db: Sql, at = new Date()): Promise<BudgetState[]> {
  const rows = await db.selectFrom('usage_budgets').selectAll().orderBy('id').execute();
  return Promise.all(rows.map((b) => state(db, b, at)));
}

async function getBudget(db: Sql, id: number): Promise<Row<'usage_budgets'>> {
  const b = await db.selectFrom('usage_budgets').selectAll().where('id', '=', id).executeTakeFirst();
  if (!b) throw notFound();
  return b;
}

/** Add a budget (400 ERR_USAGE_SUBJECT_NOT_FOUND for an unknown user or team), with its action-log entry. */
export async function createBudget(db: Sql, actorId: number, b: BudgetInput): Promise<BudgetState> {
  return inTransaction(db, async (trx) => {
    if ((await subjectName(trx, b.scope, b.subject_id)) === null)
      throw new AppError('ERR_USAGE_SUBJECT_NOT_FOUND', `no ${b.scope} with the id ${b.subject_id}`, {
        details: { field: 'subject_id' },
      });
    const dup = await trx
      .selectFrom('usage_budgets')
      .select('id')
      .where('scope', '=', b.scope)
      .where('subject_id', '=', b.subject_id)
      .where('metric', '=', b.metric)
      .where('period', '=', b.period)
      .executeTakeFirst();
    if (dup)
      throw new AppError(
        'ERR_USAGE_BUDGET_EXISTS',
        `this ${b.scope} already has a ${b.period === 'day' ? 'daily' : 'monthly'} ${b.metric} budget (id ${dup.id}); change it instead`,
        { details: { budget_id: dup.id } },
      );
    const row = await trx.insertInto('usage_budgets').values(b).returningAll().executeTakeFirstOrThrow();
    await logAction(trx, {
      event: 'usage.budget_created',
      actorId,
      subjectId: b.scope === 'user' ? b.subject_id : null,
      data: { ...b, id: row.id },
    });
    return state(trx, row, new Date());
  });
}

/** Change a budget's amount (a raise counts from the next turn), with its action-log entry. */
export async function updateBudget(db: Sql, actorId: number, id: number, amount: number): Promise<BudgetState> {
  return inTransaction(db, async (trx) => {
    const before = await getBudget(trx, id);
    await trx.updateTable('usage_budgets').set({ amount, updated_at: nowIso() }).where('id', '=', id).execute();
    await logAction(trx, {
      event: 'usage.budget_updated',
      actorId,
      subjectId: before.scope === 'user' ? before.subject_id : null,
      data: { id, scope: before.scope, subject_id: before.subject_id, from: before.amount, to: amount },
    });
    return state(trx, await getBudget(trx, id), new Date());
  });
}

/** Remove a budget, with its action-log entry. */
export async function deleteBudget(db: Sql, actorId: number, id: number): Promise<void> {
  await inTransaction(db, async (trx) => {
    const b = await getBudget(trx, id);
    await trx.deleteFrom('usage_budgets').where('id', '=', id).execute();
    await logAction(trx, {
      event: 'usage.budget_deleted',
      actorId,
      subjectId: b.scope === 'user' ? b.subject_id : null,
      data: { id, scope: b.scope, subject_id: b.subject_id, metric: b.metric, period: b.period, amount: b.amount },
    });
  });
}
