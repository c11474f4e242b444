import type { ErrorArea } from './types.js';

/** Usage, cost and budgets (docs/usage.md). */
export const USAGE_ERRORS = {
  ERR_USAGE_BUDGET_EXCEEDED: {
    status: 429,
    surfaces: ['http'],
    description:
      "The user's or their team's budget (tokens or cost, per UTC day or month) is used up: the turn is refused before any model call. It runs again when the period turns or an admin raises the budget.",
  },
  ERR_USAGE_BUDGET_NOT_FOUND: { status: 404, surfaces: ['http'], description: 'No such budget.' },
  ERR_USAGE_BUDGET_EXISTS: {
    status: 409,
    surfaces: ['http'],
    description: 'That user or team already has a budget of this metric and period; change it instead.',
  },
  ERR_USAGE_SUBJECT_NOT_FOUND: {
    status: 400,
    surfaces: ['http'],
    description: 'The budget names a user or team that does not exist.',
  },
  ERR_USAGE_BAD_QUERY: {
    status: 400,
    surfaces: ['http'],
    description:
      'A usage query parameter is wrong: from/to must be UTC dates YYYY-MM-DD with from ≤ to and at most 366 days apart; group one of user, team, model; period day or month.',
  },
  ERR_USAGE_CURRENCY_MISMATCH: {
    status: 400,
    surfaces: ['http'],
    description: 'Every priced chat model uses one currency (so costs add up); this price names another.',
  },
} as const satisfies ErrorArea;
