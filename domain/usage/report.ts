/**
 * The admin's usage report (docs/usage.md "Report"): `usage_daily` summed per UTC day or month and
 * per user, team or model over a range of days. Teams come from the identity store when asked (a
 * user's usage counts for every team they are in now; a user in no team is under team null).
 */
import { sql } from 'kysely';
import type { UsageRowView } from '../../core/api-types-admin.js';
import type { Sql } from '../db/index.js';
import { round } from './budgets.js';

export type UsageGroup = 'user' | 'team' | 'model';
export type UsagePeriod = 'day' | 'month';

export interface UsageQuery {
  /** First and last UTC day, `YYYY-MM-DD`, inclusive. */
  from: string;
  to: string;
  group: UsageGroup;
  period: UsagePeriod;
}

/** One line of the report (core/api-types-admin.ts: the admin API's shape). */
export type UsageRow = UsageRowView;

export const USAGE_COLUMNS = [
  'period',
  'group',
  'key',
  'name',
  'turns',
  'input_tokens',
  'output_tokens',
  'tool_calls',
  'mails',
  'sandbox_minutes',
  'cost',
] as const;

export async function usageReport(db: Sql, q: UsageQuery): Promise<UsageRow[]> {
  const periodExpr = sql<string>`substr(usage_daily.day, 1, ${sql.raw(q.period === 'day' ? '10' : '7')})`;
  const base = db.selectFrom('usage_daily').where('usage_daily.day', '>=', q.from).where('usage_daily.day', '<=', q.to);
  const sums = [
    sql<number>`sum(usage_daily.turns)`.as('turns'),
    sql<number>`sum(usage_daily.input_tokens)`.as('input_tokens'),
    sql<number>`sum(usage_daily.output_tokens)`.as('output_tokens'),
    sql<number>`sum(usage_daily.tool_calls)`.as('tool_calls'),
    sql<number>`sum(usage_daily.mails)`.as('mails'),
    sql<number>`sum(usage_daily.cost)`.as('cost'),
    sql<number>`sum(usage_daily.sandbox_seconds)`.as('sandbox_seconds'),
  ];
  let rows: {
    period: string;
    key: number | string | null;
    turns: number;
    input_tokens: number;
    output_tokens: number;
    tool_calls: number;
    mails: number;
    cost: number;
    sandbox_seconds: number;
  }[];
  if (q.group === 'team') {
    rows = await base
      .leftJoin('team_members', 'team_members.user_id', 'usage_daily.user_id')
      .select([periodExpr.as('period'), 'team_members.team_id as key', ...sums])
      .groupBy([periodExpr, 'team_members.team_id'])
      .execute();
  } else if (q.group === 'user') {
    rows = await base
      .select([periodExpr.as('period'), 'usage_daily.user_id as key', ...sums])
      .groupBy([periodExpr, 'usage_daily.user_id'])
      .execute();
  } else {
    rows = await base
      .select([periodExpr.as('period'), 'usage_daily.model_id as key', ...sums])
      .groupBy([periodExpr, 'usage_daily.model_id'])
      .execute();
  }
  const names = await namesOf(
    db,
    q.group,
    rows.map((r) => r.key),
  );
  return rows
    .map((r) => ({
      period: r.period,
      group: q.group,
      key: r.key,
      name: r.key === null ? null : (names.get(String(r.key)) ?? null),
      turns: Number(r.turns),
      input_tokens: Number(r.input_tokens),
      output_tokens: Number(r.output_tokens),
      tool_calls: Number(r.tool_calls),
      mails: Number(r.mails),
      sandbox_minutes: Math.round(Number(r.sandbox_seconds) / 6) / 10,
      cost: round(Number(r.cost)),
    }))
    .sort(
      (a, b) =>
        a.period.localeCompare(b.period) ||
        String(a.key ?? '').localeCompare(String(b.key ?? ''), 'en', { numeric: true }),
    );
}

async function namesOf(db: Sql, group: UsageGroup, keys: (number | string | null)[]): Promise<Map<string, string>> {
  const ids = [...new Set(keys.filter((k) => k !== null))];
  if (!ids.length) return new Map();
  const rows =
    group === 'user'
      ? await db.selectFrom('users').select(['id', 'username as name']).where('id', 'in', ids.map(Number)).execute()
      : group === 'team'
        ? await db.selectFrom('teams').select(['id', 'name']).where('id', 'in', ids.map(Number)).execute()
        : await db
            .selectFrom('chat_models')
            .select(['id', 'label as name'])
            .where('id', 'in', ids.map(String))
            .execute();
  return new Map(rows.map((r) => [String(r.id), r.name]));
}

/** The currency of the priced models (one per install), null when none is priced. */
export async function usageCurrency(db: Sql): Promise<string | null> {
  const r = await db
    .selectFrom('chat_models')
    .select('price_currency')
    .where('price_currency', 'is not', null)
    .executeTakeFirst();
  return r?.price_currency ?? null;
}

/** The report as CSV (RFC 4180: a header line, CRLF, fields quoted when they hold a comma, quote or line break). */
export function usageCsv(rows: UsageRow[], currency: string | null): string {
  const cell = (v: unknown) => {
    const s = v === null || v === undefined ? '' : String(v);
    // A leading = + - @ would be a formula to a spreadsheet: quoted with a ' in front.
    const safe = /^[=+\-@]/.test(s) && typeof v === 'string' ? `'${s}` : s;
    return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
  };
  const head = [...USAGE_COLUMNS, 'currency'];
  const lines = [
    head.join(','),
    ...rows.map((r) => [...USAGE_COLUMNS.map((c) => cell(r[c])), cell(currency)].join(',')),
  ];
  return lines.join('\r\n') + '\r\n';
}
