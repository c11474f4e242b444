/**
 * Sandbox time in usage (docs/usage.md): `usage_daily.sandbox_seconds`, the seconds a user's chats
 * on a model held a sandbox, from its claim to its release, added on the UTC day of the release.
 */
const steps = `
ALTER TABLE usage_daily ADD COLUMN sandbox_seconds INTEGER NOT NULL DEFAULT 0;
`;

export const sqlite = steps;
export const postgres = steps;
