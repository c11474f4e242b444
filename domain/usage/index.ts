/** Usage, cost and budgets of chat turns (docs/usage.md). */
export * from './record.js';
export * from './budgets.js';
export * from './report.js';
