// The tables of the mail gate and the proxy audit, and of the fleet (nodes, sandboxes, leases,
// nonces): part of `Schema` (schema.ts).
import type { ColumnType, Generated } from 'kysely';
import type { ProxyRequestFields } from '../../core/api-types-data-access.js';

/** A column the database fills in when the insert leaves it out. */
type Default<T> = ColumnType<T, T | undefined, T>;

/** A mail send the proxy held for the daemon, and what became of it (docs/audit.md). */
export interface MailHoldsTable {
  id: string;
  session_id: string;
  user_id: number;
  node_id: string;
  turn_id: string | null;
  call_id: string | null;
  verdict: 'allow' | 'ask';
  /** JSON list of every recipient; `asked`: the ones outside the allowed domains. */
  recipients: string;
  /** JSON { to, cc, bcc }: the recipients by header (migration 065; null for older rows). */
  recipient_fields: string | null;
  asked: string;
  subject: string;
  /** JSON list of { name, size }. */
  attachments: string;
  bytes: number;
  state: 'pending' | 'sent' | 'approved' | 'denied' | 'timed_out' | 'refused';
  scope: 'once' | 'recipient' | null;
  code: string | null;
  created_at: Default<string>;
  decided_at: string | null;
}

/** The server-wide send policy: one row, id 1 (docs/proxy.md#send-policy). */
export interface MailServerPolicyTable {
  id: number;
  /** JSON lists of domains. */
  allow_domains: string;
  block_domains: string;
  other: 'allow' | 'ask' | 'block';
  max_recipients: number;
  max_per_hour: number;
  approval_timeout_s: number;
  updated_by: number | null;
  updated_at: Default<string>;
}

/** A user's lock row for reserving hourly mail slots (docs/proxy.md#send-policy). */
export interface MailSendLocksTable {
  user_id: number;
  reserved_at: string;
}

/** One request the in-sandbox proxy decided on (docs/audit.md); the recorded fields are the audit API's (core/api-types-data-access.ts). */
export interface ProxyRequestsTable extends ProxyRequestFields {
  id: Generated<number>;
  session_id: string;
  user_id: number;
  turn_id: string | null;
  call_id: string | null;
  created_at: Default<string>;
}

/** One row per `airlock serve` process that ever joined the fleet (docs/deploy.md). */
export interface NodesTable {
  id: string;
  url: string;
  version: string;
  capacity: number;
  sessions: Default<number>;
  started_at: string;
  heartbeat_at: string;
}

/** The live sandbox of a chat session and the node that owns it. */
export interface SandboxesTable {
  session_id: string;
  user_id: number;
  node_id: string;
  container_id: string | null;
  state: 'starting' | 'live' | 'lost';
  created_at: Default<string>;
  updated_at: Default<string>;
}

/** A named lock with a lease, for work done once across the fleet. */
export interface LeasesTable {
  name: string;
  holder: string;
  expires_at: number;
}

/** A nonce of a signed request between nodes, kept until its window ends (migration 010). */
export interface NodeNoncesTable {
  nonce: string;
  node_id: string;
  /** unix ms */
  expires_at: number;
}
