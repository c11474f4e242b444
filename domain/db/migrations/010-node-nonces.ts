/**
 * Replay-proof requests between nodes (docs/deploy.md, Requests between nodes): every signed
 * request's nonce is recorded here, fleet-wide, until its signature's window ends. The nonce is
 * the primary key, so a second use fails on either engine (one INSERT … ON CONFLICT DO NOTHING
 * that inserts no row); expired rows are purged on the heartbeat. Transient: `db copy` skips it.
 */
function table(int: string): string {
  return `
CREATE TABLE node_nonces (
  nonce      TEXT PRIMARY KEY,
  node_id    TEXT NOT NULL,
  expires_at ${int} NOT NULL
);
CREATE INDEX node_nonces_expiry ON node_nonces (expires_at);
`;
}

export const sqlite = table('INTEGER');
export const postgres = table('BIGINT');
