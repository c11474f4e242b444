/**
 * The server-wide send policy, kept in the database (docs/proxy.md#send-policy): one row, seeded
 * from AIRLOCK_MAIL_* the first time it is read, then changed by an admin
 * (PUT /api/admin/mail-policy). Every node reads the same row, so a change applies on all of
 * them at the next send (the mail gate reads the policy again per send) and at the next session start.
 */
import type { Config } from '../../core/index.js';
import type { MailPolicy } from '../../core/sandbox-protocol.js';
import { nowIso, type Row, type Sql } from '../db/index.js';

export interface ServerMailPolicy extends MailPolicy {
  updated_by: number | null;
  updated_at: string;
}

/** The first value of the row: AIRLOCK_MAIL_* as loaded into the config. */
function seed(defaults: Readonly<Config['mail']>) {
  return {
    id: 1,
    allow_domains: JSON.stringify([...defaults.allowDomains].sort()),
    block_domains: JSON.stringify([...defaults.blockDomains].sort()),
    other: defaults.other,
    max_recipients: defaults.maxRecipients,
    max_per_hour: defaults.maxPerHour,
    approval_timeout_s: defaults.approvalTimeoutS,
    updated_by: null,
  };
}

function view(r: Row<'mail_server_policy'>): ServerMailPolicy {
  return {
    allow_domains: JSON.parse(r.allow_domains) as string[],
    block_domains: JSON.parse(r.block_domains) as string[],
    other: r.other,
    max_recipients: r.max_recipients,
    max_per_hour: r.max_per_hour,
    approval_timeout_s: r.approval_timeout_s,
    updated_by: r.updated_by,
    updated_at: r.updated_at,
  };
}

/** The server-wide send policy; written from `defaults` (AIRLOCK_MAIL_*) when there is none yet. */
export async function serverMailPolicy(db: Sql, defaults: Readonly<Config['mail']>): Promise<ServerMailPolicy> {
  const row = await db.selectFrom('mail_server_policy').selectAll().where('id', '=', 1).executeTakeFirst();
  if (row) return view(row);
  // Two nodes reading first at once: one insert wins, both read the same row.
  await db
    .insertInto('mail_server_policy')
    .values(seed(defaults))
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
  return view(await db.selectFrom('mail_server_policy').selectAll().where('id', '=', 1).executeTakeFirstOrThrow());
}

export type ServerMailPolicyChange = Partial<MailPolicy>;

/** Change fields of the server-wide send policy (validated by the caller); returns the new one. */
export async function updateServerMailPolicy(
  db: Sql,
  defaults: Readonly<Config['mail']>,
  change: ServerMailPolicyChange,
  by: number,
): Promise<ServerMailPolicy> {
  await serverMailPolicy(db, defaults);
  const set: Record<string, unknown> = { updated_by: by, updated_at: nowIso() };
  if (change.allow_domains) set.allow_domains = JSON.stringify([...new Set(change.allow_domains)].sort());
  if (change.block_domains) set.block_domains = JSON.stringify([...new Set(change.block_domains)].sort());
  for (const k of ['other', 'max_recipients', 'max_per_hour', 'approval_timeout_s'] as const)
    if (change[k] !== undefined) set[k] = change[k];
  await db.updateTable('mail_server_policy').set(set).where('id', '=', 1).execute();
  return serverMailPolicy(db, defaults);
}
