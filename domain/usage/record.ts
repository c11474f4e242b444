/**
 * What chat turns use (docs/usage.md): one row per (UTC day, user, model) in `usage_daily`,
 * added to in the transaction that ends each turn, with the cost at the model's price of that
 * moment. Budgets (budgets.ts) and the admin report (report.ts) read these rows.
 */
import type { TurnUsage } from '../../core/index.js';
import type { Sql } from '../db/index.js';

/** One turn's usage, as the turn's end knows it. */
export interface TurnUsageRecord {
  userId: number;
  /** The chat model's id (chat_models.id) the turn ran with. */
  modelId: string;
  /** The provider-reported tokens (absent: the agent reported none, e.g. the model never answered). */
  usage?: TurnUsage;
  toolCalls: number;
  mails: number;
  /** When the turn ended (its UTC day is the row's). */
  at: Date;
}

/** Add the time one chat held a sandbox (claim to release) to the release day's row; no turn, no tokens. */
export async function recordSandboxTime(
  db: Sql,
  r: { userId: number; modelId: string; seconds: number; at: Date },
): Promise<void> {
  const seconds = Math.max(0, Math.round(r.seconds));
  await db
    .insertInto('usage_daily')
    .values({ day: utcDay(r.at), user_id: r.userId, model_id: r.modelId, sandbox_seconds: seconds })
    .onConflict((oc) =>
      oc.columns(['day', 'user_id', 'model_id']).doUpdateSet((eb) => ({
        sandbox_seconds: eb('usage_daily.sandbox_seconds', '+', eb.ref('excluded.sandbox_seconds')),
      })),
    )
    .execute();
}

/** The UTC day of an instant, `YYYY-MM-DD`. */
export function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/** The cost of tokens at a price per million (null prices cost nothing). */
export function costOf(
  usage: TurnUsage | undefined,
  price: { price_input_per_mtok: number | null; price_output_per_mtok: number | null } | undefined,
): number {
  if (!usage || !price) return 0;
  return (
    (usage.input_tokens * (price.price_input_per_mtok ?? 0) +
      usage.output_tokens * (price.price_output_per_mtok ?? 0)) /
    1_000_000
  );
}

/** Add one turn to its day's row (in the caller's transaction: the turn's end). Returns the cost it added. */
export async function recordTurnUsage(db: Sql, r: TurnUsageRecord): Promise<number> {
  const price = await db
    .selectFrom('chat_models')
    .select(['price_input_per_mtok', 'price_output_per_mtok'])
    .where('id', '=', r.modelId)
    .executeTakeFirst();
  const cost = costOf(r.usage, price);
  const add = {
    turns: 1,
    input_tokens: r.usage?.input_tokens ?? 0,
    output_tokens: r.usage?.output_tokens ?? 0,
    tool_calls: r.toolCalls,
    mails: r.mails,
    cost,
  };
  await db
    .insertInto('usage_daily')
    .values({ day: utcDay(r.at), user_id: r.userId, model_id: r.modelId, ...add })
    .onConflict((oc) =>
      oc.columns(['day', 'user_id', 'model_id']).doUpdateSet((eb) => ({
        turns: eb('usage_daily.turns', '+', eb.ref('excluded.turns')),
        input_tokens: eb('usage_daily.input_tokens', '+', eb.ref('excluded.input_tokens')),
        output_tokens: eb('usage_daily.output_tokens', '+', eb.ref('excluded.output_tokens')),
        tool_calls: eb('usage_daily.tool_calls', '+', eb.ref('excluded.tool_calls')),
        mails: eb('usage_daily.mails', '+', eb.ref('excluded.mails')),
        cost: eb('usage_daily.cost', '+', eb.ref('excluded.cost')),
      })),
    )
    .execute();
  return cost;
}
