/**
 * The real mail path without a container (startMailPath: test/integration/mail-gate.test.ts
 * drives its own sends through it), and on it a chat app whose turns send one message
 * (startMailRig: test/integration/mail-approval-preview.test.ts, test/browser/chat-approval.test.ts): the web app with its chat
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
import { TurnCalls } from '../../core/turn-calls.js';
import { buildRoutes, buildProfile, serverMailPolicy } from '../../daemon/host/overlay.js';
import { EgressGatewayService } from '../../daemon/host/egress.js';
import { MailGate } from '../../domain/mail/index.js';
import { start as startUpstream } from '../../emulator/fake-upstream.js';
import { startCredentialProxy, type ProxyDecision } from '../../proxy/index.js';
import { buildMessage, type InlinePng } from '../../tools/mime.js';
import { chartFileName } from '../../tools/attachments.js';
import type { WebServices } from '../../web/index.js';
import { addUser, startTestApp, tempDir, type TestApp } from './app.js';

/** The real token the egress gateway holds (it must never show up anywhere but upstream). */
export const MAIL_TOKEN = 'ya29.real-mail-rig-token-0123456789abcdef';
export const BODY = 'Quarterly numbers attached: the confidential body of the message.';
// A 1×1 PNG.
export const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);
const CHART = `${randomUUID()}.png`;

export interface MailRigOptions {
  /** The chart's bytes (default: a 1×1 PNG) and title. */
  png?: Buffer;
  chartTitle?: string;
  body?: string;
  /** An HTML part besides the text (send_email's `html`). */
  html?: string;
  /** Show send_email's input in the tool row as the agent gives it (default: the subject only). */
  toolInput?: boolean;
  /** The message's subject (default: the turn's prompt). */
  subject?: string;
  /** Files from out/ sent after the chart (send_email's CSV, XLSX, SVG…, tools/mime.ts). */
  files?: InlinePng[];
  /** Steps of the turn before the send (e.g. a chart tool's events). */
  beforeSend?(req: TurnRequest): Promise<void>;
  /** The users' workspaces (uploads), when a test reads them. */
  workspaces?: WebServices['workspaces'];
}

/** The real mail path for tests: where a turn posts its sends, and the token the gateway holds. */
export interface MailPathTurn {
  /** The credential proxy's base URL (the sandbox's 127.0.0.1:8700). */
  proxyUrl: string;
  /** The placeholder the agent holds instead of the token (Bearer on each send). */
  placeholder: string;
}

export interface MailPathOptions {
  dataDir?: string;
  /** Extra settings over `corp.example` allowed and other domains asked about. */
  env?: Record<string, string>;
  /** One turn: what the agent's send_email tool would do, with the proxy and the placeholder. */
  turn(req: TurnRequest, path: MailPathTurn): Promise<TurnResult>;
  /** Each decision the proxy reports (after the gate got it). */
  onDecision?(d: ProxyDecision): void;
  /** The users' workspaces (uploads), when a test reads them. */
  workspaces?: WebServices['workspaces'];
}

/**
 * The web app with its chat routes, the MailGate, the egress gateway holding MAIL_TOKEN, the
 * credential proxy with the server's send policy and the fake Google upstream, wired as the
 * session manager wires them. One proxy serves all sessions (turns run one at a time; the proxy
 * asks about the turn now running, as the supervisor's does).
 */
export async function startMailPath(t: Test, o: MailPathOptions) {
  const upstream = await startUpstream();
  t.teardown(() => upstream.close());
  let current: TurnRequest | undefined;
  let calls: TurnCalls | undefined;
  const path: MailPathTurn = { proxyUrl: '', placeholder: `ph-mail-${randomUUID()}` };
  const runner: TurnRunner = {
    async runTurn(req): Promise<TurnResult> {
      // The turn's tool calls, read from its events as daemon/runtime/turn.ts reads them.
      const mine = new TurnCalls();
      calls = mine;
      current = {
        ...req,
        onEvent: (e) => {
          mine.observe(e);
          req.onEvent(e);
        },
      };
      try {
        return await o.turn(current, path);
      } finally {
        current = undefined;
        calls = undefined;
        mine.end();
      }
    },
  };
  // The gate is the approvals port, made on the app's database.
  let gate!: MailGate;
  const app = await startTestApp(t, {
    dataDir: o.dataDir,
    env: { AIRLOCK_MAIL_ALLOW_DOMAINS: 'corp.example', AIRLOCK_MAIL_OTHER: 'ask', ...o.env },
    services: (a) => {
      gate = new MailGate(a.database.sql, a.config, a.log);
      return { chat: { runner }, approvals: gate, ...(o.workspaces ? { workspaces: o.workspaces } : {}) };
    },
  });
  const routes = buildRoutes({
    google: { mailBaseUrl: upstream.url, sheetsBaseUrl: upstream.url, driveBaseUrl: upstream.url },
    model: { provider: 'openai', baseUrl: upstream.url },
    hasAccountToken: true,
    hasModelKey: true,
  });
  const socketPath = join(tempDir(t, 'airlock-mail-rig-'), 'egress.sock');
  const egress = new EgressGatewayService({ log: app.log });
  const session = () => ({ sessionId: current!.sessionId, userId: current!.userId });
  // The gateway holds the token and decides every send on the host, as the session manager wires it.
  const handle = await egress.open('mail-rig', socketPath, {
    userId: 0,
    routes,
    tokens: {
      MAIL_ACCESS_TOKEN: MAIL_TOKEN,
      SHEETS_ACCESS_TOKEN: MAIL_TOKEN,
      SEARCH_ACCESS_TOKEN: MAIL_TOKEN,
      MODEL_API_KEY_REAL: MAIL_TOKEN,
    },
    mailPolicy: serverMailPolicy(app.config),
    hold: (h) => gate.hold({ ...session(), turn: current, calls }, h),
    currentTurn: () => current?.turnId ?? null,
  });
  t.teardown(() => handle.close());
  const profile: SessionProfile = buildProfile('mail-rig', 0, routes);
  const proxy = await startCredentialProxy({
    profile,
    getPlaceholder: (n) => (n === 'MAIL_API_KEY' ? path.placeholder : undefined),
    egressSocket: socketPath,
    // The policy the session start hands the proxy (its first wall; every user here has the server's).
    mailPolicy: serverMailPolicy(app.config),
    onDecision: (d) => {
      gate.proxied(session(), d);
      o.onDecision?.(d);
    },
    currentTurn: () => current?.turnId ?? null,
  });
  t.teardown(() => proxy.close());
  path.proxyUrl = `http://127.0.0.1:${proxy.port}`;
  return { app, gate, upstream, placeholder: path.placeholder };
}

/** A chat app whose every turn sends the one message described in the file's comment (its subject: the prompt). */
export async function startMailRig(t: Test, dataDir: string, o: MailRigOptions = {}) {
  const { app, gate, upstream } = await startMailPath(t, {
    dataDir,
    workspaces: o.workspaces,
    async turn(req, path) {
      await o.beforeSend?.(req);
      const subject = o.subject ?? req.prompt;
      const raw = await buildMessage(
        {
          to: ['ext@partner.example'],
          cc: ['colleague@corp.example'],
          bcc: ['audit@corp.example'],
          subject,
          text: o.body ?? BODY,
          ...(o.html !== undefined ? { html: o.html } : {}),
        },
        [
          {
            filename: CHART,
            name: chartFileName(o.chartTitle ?? 'Quarterly revenue (EUR) — 2026'),
            content: o.png ?? PNG,
          },
          ...(o.files ?? []),
        ],
        'me@corp.example',
      );
      const input = o.toolInput
        ? {
            to: ['ext@partner.example'],
            cc: ['colleague@corp.example'],
            bcc: ['audit@corp.example'],
            subject,
            attachments: [CHART],
          }
        : { subject };
      req.onEvent({ type: 'tool_start', call_id: 'call-1', tool: 'send_email', input });
      const res = await fetch(`${path.proxyUrl}/gmail/mail/v1/users/me/messages/send`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${path.placeholder}`,
          'content-type': 'application/json',
          [CALL_ID_HEADER]: 'call-1',
        },
        body: JSON.stringify({ raw: raw.toString('base64url') }),
      });
      const out = await res.text();
      req.onEvent({
        type: 'tool_end',
        call_id: 'call-1',
        tool: 'send_email',
        ok: res.ok,
        ...(res.ok ? { output: out } : { error: out }),
        duration_ms: 1,
      });
      return { stop_reason: 'end_turn' };
    },
  });
  return { app, gate, upstream };
}

export async function loginAs(app: TestApp, name: string, create: boolean) {
  if (create) await addUser(app.database, name, `${name}-password`);
  const c = app.client();
  if ((await c.login(name, `${name}-password`)).status !== 200) throw new Error('login failed');
  return c;
}
