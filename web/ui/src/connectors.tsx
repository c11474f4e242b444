// OAuth connectors on the page (docs/connectors.md, "OAuth per user"): the Connectors section of
// Settings (GET /api/connections: connect or disconnect each), and the "Connect <label>" button a
// tool result that asks for a connection becomes in the chat. Connecting sends the browser to the
// connector's authorization server; the callback brings it back to `return_to` (the chat it came
// from, or Settings).
import { useState } from 'preact/hooks';
import type { ConnectorConnectionView } from '../../chat-api.js';
import { api } from './api.js';
import { Section, useLoad } from './admin/common.js';
import { ShownText, shownOf, type Shown } from './error-text.js';
import { returnHere } from './return-here.js';

/** Start connecting: the browser leaves for the authorization server. */
async function startConnect(connectorId: string, returnTo: string): Promise<void> {
  const r = await api<{ authorization_url: string }>(
    'POST',
    `/api/connections/${encodeURIComponent(connectorId)}/connect`,
    { return_to: returnTo },
  );
  location.href = r.authorization_url;
}

/** Settings → Connectors: the OAuth connectors the user may use, connected or not. */
export function ConnectorsSection() {
  const [list, failed, reload] = useLoad(() =>
    api<{ connectors: ConnectorConnectionView[] }>('GET', '/api/connections'),
  );
  const [msg, setMsg] = useState<Shown | null>(null);
  const run = (fn: () => Promise<unknown>) => () => void fn().catch((e: unknown) => setMsg(shownOf(e)));
  const disconnect = (c: ConnectorConnectionView) =>
    run(async () => {
      if (!confirm(`Disconnect ${c.label}? Airlock forgets its tokens and asks ${c.label} to revoke them.`)) return;
      const r = await api<{ revoked_at_server: boolean | null }>(
        'DELETE',
        `/api/connections/${encodeURIComponent(c.connector_id)}`,
      );
      await reload();
      setMsg(
        r.revoked_at_server === false
          ? `Disconnected from Airlock, but ${c.label} did not confirm the revocation.`
          : `Disconnected ${c.label}.`,
      );
    });
  if (failed || (list && list.connectors.length === 0)) return null;
  return (
    <Section title="Connectors">
      <p class="muted">Tools of these services act as you: connect each one you want the agent to use.</p>
      <ul class="connectors" id="connectors">
        {list?.connectors.map((c) => (
          <li key={c.connector_id} data-connector={c.connector_id}>
            <strong>{c.label}</strong>{' '}
            {c.connected ? (
              <>
                <span class="ok">Connected</span>{' '}
                <button type="button" class="secondary" onClick={disconnect(c)}>
                  Disconnect
                </button>
              </>
            ) : (
              <button type="button" onClick={run(() => startConnect(c.connector_id, '/#/settings'))}>
                Connect
              </button>
            )}
          </li>
        ))}
      </ul>
      {msg && (
        <div class="banner info" role="status">
          <ShownText s={msg} />
        </div>
      )}
    </Section>
  );
}

/**
 * A failed tool call that asks the user to connect: the gateway's code, or its sentence (the
 * agent passes an error result's text as the tool's error). The button below shows only for a
 * connector of the user's that is not connected, so a look-alike text shows nothing.
 */
export const asksToConnect = (error: string): boolean => /ERR_CONNECTOR_NOT_CONNECTED|has not connected /.test(error);

/**
 * In the chat: under a tool result that asks for a connection, "Connect <label>" for the
 * connector the tool belongs to; back to this chat after.
 */
export function ConnectFromChat({ tool }: { tool: string }) {
  const [list] = useLoad(() => api<{ connectors: ConnectorConnectionView[] }>('GET', '/api/connections'));
  const [msg, setMsg] = useState<Shown | null>(null);
  // Connector tools are named `<connector id>__<tool>` (agent/connectors.ts).
  const c = list?.connectors.find((x) => tool.startsWith(`${x.connector_id}__`));
  if (!c || c.connected) return null;
  return (
    <div class="connect-connector" data-connector={c.connector_id}>
      <button
        type="button"
        onClick={() => void startConnect(c.connector_id, returnHere()).catch((e: unknown) => setMsg(shownOf(e)))}
      >
        Connect {c.label}
      </button>
      {msg && (
        <span class="muted">
          {' '}
          <ShownText s={msg} />
        </span>
      )}
    </div>
  );
}
