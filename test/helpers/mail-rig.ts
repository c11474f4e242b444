/**
 * A chat app whose turns send one message through the real mail path (test/integration/
 * mail-approval-preview.test.ts, test/browser/chat-approval.test.ts): the web app with its chat
 * routes, the MailGate, the credential proxy with the send policy, the egress gateway and the fake
 * Google upstream. Each turn's prompt is the subject; the message is the one the send_email tool
 * builds (tools/mime.ts): From, To, Cc, Bcc, the text, and a chart as an inline PNG named after
 * its title. `corp.example` is allowed; any other domain is asked about.
 */
import type { Test } from 'tap';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { TurnRequest, TurnResult, TurnRunner } from '../../core/index.js';
import { CALL_ID_HEADER, type SessionProfile } from '../../core/sandbox-protocol.js';
import { buildRoutes, buildProfile, serverMailPolicy } from '../../daemon/overlay.js';
import { EgressGatewayService } from '../../daemon/egress.js';
import { MailGate } from '../../daemon/mail-gate.js';
import { start as startUpstream } from '../../emulator/fake-upstream.js';
import { startCredentialProxy } from '../../proxy/index.js';
import { buildMessage } from '../../tools/mime.js';
import { chartFileName } from '../../tools/attachments.js';
import type { WebServices } from '../../web/index.js';
import { addUser, startTestApp, tempDir, type TestApp } from './app.js';

const TOKEN = 'ya29.real-preview-token-0123456789abcdef';
export const BODY = 'Quarterly numbers attached: the confidential body of the message.';
// A 1×1 PNG.
export const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
const CHART = `${randomUUID()}.png`;

export interface MailRigOptions {
  /** The chart's bytes (default: a 1×1 PNG) and title. */
  png?: Buffer;
  chartTitle?: string;
  body?: string;
  /** Show send_email's input in the tool row as the agent gives it (default: the subject only). */
  toolInput?: boolean;
  /** The message's subject (default: the turn's prompt). */
  subject?: string;
  /** Steps of the turn before the send (e.g. a chart tool's events). */
  beforeSend?(req: TurnRequest): Promise<void>;
}

export async function startMailRig(t: Test, dataDir: string, o: MailRigOptions = {}) {
  const upstream = await startUpstream();
  t.teardown(() => upstream.close());
  let current: TurnRequest | undefined;
  const holder: { proxyPort?: number } = {};
  const placeholder = `ph-mail-${randomUUID()}`;
  const runner: TurnRunner = {
    async runTurn(req): Promise<TurnResult> {
      current = req;
      try {
        await o.beforeSend?.(req);
        const subject = o.subject ?? req.prompt;
        const raw = await buildMessage(
          { to: ['ext@partner.example'], cc: ['colleague@corp.example'], bcc: ['audit@corp.example'], subject, text: o.body ?? BODY },
          [{ filename: CHART, name: chartFileName(o.chartTitle ?? 'Quarterly revenue (EUR) — 2026'), content: o.png ?? PNG }],
          'me@corp.example',
        );
        const input = o.toolInput ? { to: ['ext@partner.example'], cc: ['colleague@corp.example'], bcc: ['audit@corp.example'], subject, attachments: [CHART] } : { subject };
        req.onEvent({ type: 'tool_start', call_id: 'call-1', tool: 'send_email', input });
        const res = await fetch(`http://127.0.0.1:${holder.proxyPort}/gmail/mail/v1/users/me/messages/send`, {
          method: 'POST',
          headers: { authorization: `Bearer ${placeholder}`, 'content-type': 'application/json', [CALL_ID_HEADER]: 'call-1' },
          body: JSON.stringify({ raw: raw.toString('base64url') }),
        });
        const out = await res.text();
        req.onEvent({ type: 'tool_end', call_id: 'call-1', tool: 'send_email', ok: res.ok, ...(res.ok ? { output: out } : { error: out }), duration_ms: 1 });
        return { stop_reason: 'end_turn' };
      } finally {
        current = undefined;
      }
    },
  };
  const services: WebServices = { chat: { runner } };
  const app = await startTestApp(t, { dataDir, env: { AIRLOCK_MAIL_ALLOW_DOMAINS: 'corp.example', AIRLOCK_MAIL_OTHER: 'ask' }, services });
  const gate = new MailGate(app.database.sql, app.config, app.log);
  services.approvals = gate;
  const routes = buildRoutes({ google: { mailBaseUrl: upstream.url, sheetsBaseUrl: upstream.url, driveBaseUrl: upstream.url }, model: { provider: 'openai', baseUrl: upstream.url }, hasAccountToken: true, hasModelKey: true });
  const socketPath = join(tempDir(t, 'airlock-preview-'), 'egress.sock');
  const egress = new EgressGatewayService({ log: app.log });
  const session = () => ({ sessionId: current!.sessionId, userId: current!.userId });
  const handle = await egress.open('preview-test', socketPath, {
    userId: 0,
    routes,
    tokens: { MAIL_ACCESS_TOKEN: TOKEN, SHEETS_ACCESS_TOKEN: TOKEN, SEARCH_ACCESS_TOKEN: TOKEN, MODEL_API_KEY_REAL: TOKEN },
    mailPolicy: serverMailPolicy(app.config),
    hold: (h) => gate.hold({ ...session(), turn: current }, h),
    currentTurn: () => current?.turnId ?? null,
  });
  t.teardown(() => handle.close());
  const profile: SessionProfile = buildProfile('preview-test', 0, routes);
  const proxy = await startCredentialProxy({
    profile,
    getPlaceholder: (n) => (n === 'MAIL_API_KEY' ? placeholder : undefined),
    egressSocket: socketPath,
    mailPolicy: serverMailPolicy(app.config),
    onDecision: (d) => gate.proxied(session(), d),
    currentTurn: () => current?.turnId ?? null,
  });
  t.teardown(() => proxy.close());
  holder.proxyPort = proxy.port;
  return { app, gate, upstream, services };
}

export async function loginAs(app: TestApp, name: string, create: boolean) {
  if (create) await addUser(app.database, name, `${name}-password`);
  const c = app.client();
  if ((await c.login(name, `${name}-password`)).status !== 200) throw new Error('login failed');
  return c;
}

