/**
 * Shared by the chat end-to-end Docker tests: the daemon with real sandboxes, Google-shaped
 * servers seeded with a sample spreadsheet, a signed-in client, and a stalling OpenAI-shaped model.
 */
import type Docker from 'dockerode';
import {
  createLogger,
  Encryptor,
  loadOrCreateEncryptionKey,
  hashPassword,
  WORKSPACE_SCOPES,
} from '../../core/index.js';
import { createUser } from '../../domain/users.js';
import { AccountStore } from '../../domain/accounts.js';
import { serve } from '../../daemon/serve.js';
import * as google from '../../emulator/google.js';
import * as googleOAuth from '../../emulator/google-oauth.js';
import * as openaiModel from '../../emulator/model-openai.js';
import { Client } from '../helpers/client.js';
import { logSink } from '../helpers/app.js';
import type { TestClock } from '../helpers/clock.js';
import { dataDir, runtimeConfig, sweep, uniqueOwner } from './helpers.js';

export const MODEL_KEY = 'sk-real-model-key-e2e-0123456789abcdef';

/** A recorded request's conversation as role:text lines (the system prompt left out). */
export const said = (body: any): string[] =>
  body.messages.filter((m: any) => m.role !== 'system').map((m: any) => `${m.role}:${m.content}`);

/** The daemon starters for `image` on `docker`, each torn down with its containers. */
export function chatRig(docker: Docker, image: string) {
  async function start(
    t: { teardown(fn: () => unknown): void },
    env: Record<string, string>,
    opts: { connected?: boolean; clock?: TestClock } = {},
  ) {
    const dir = dataDir(t);
    const owner = uniqueOwner('e2e');
    t.teardown(() => sweep(docker, owner));
    const g = await google.start({
      userEmail: 'alice@example.test',
      seed: {
        spreadsheets: [
          {
            id: 'sheet-sample-1',
            name: 'Sample sales 2026',
            sheets: {
              Sales: [
                ['Month', 'Sales'],
                ['Jan', 3],
                ['Feb', 5],
                ['Mar', 8],
              ],
            },
          },
        ],
      },
    });
    t.teardown(() => g.close());
    const oauth = await googleOAuth.start();
    t.teardown(() => oauth.close());
    const config = runtimeConfig(dir, image, {
      AIRLOCK_PORT: '0',
      AIRLOCK_POOL_SIZE: '0',
      AIRLOCK_LOG_LEVEL: 'debug',
      AGENT_USER_TOKEN_SECRET: 'e2e-agent-user-token-secret-0123',
      MCP_INTERNAL_SECRET: 'e2e-mcp-internal-secret-0123456789',
      AIRLOCK_GOOGLE_MAIL_BASE_URL: g.url,
      AIRLOCK_GOOGLE_SHEETS_BASE_URL: g.url,
      AIRLOCK_GOOGLE_DRIVE_BASE_URL: g.url,
      AIRLOCK_GOOGLE_REVOKE_URL: oauth.revokeUrl,
      ...env,
    });
    const logs = logSink();
    const d = await serve(config, {
      log: createLogger({ level: 'debug', destination: logs.stream }),
      runtime: { owner },
      clock: opts.clock,
    });
    t.teardown(async () => {
      await d.runtime?.close({ removeContainers: true });
      await d.close();
    });
    const user = await createUser(d.database.sql, {
      username: 'alice',
      email: 'alice@example.test',
      passwordHash: await hashPassword('alice-password'),
    });
    // A completed "connect workspace account" (the OAuth flow itself is tested in account.test.ts).
    const connect = () =>
      new AccountStore(d.database.sql, new Encryptor(loadOrCreateEncryptionKey(dir, config.encryptionKey))).connect(
        user.id,
        {
          email: 'alice@example.test',
          scopes: [...WORKSPACE_SCOPES],
          accessToken: g.token,
          expiresAt: Date.now() + 3600_000,
        },
      );
    if (opts.connected !== false) await connect();
    const c = new Client(d.web.url);
    const login = await c.login('alice', 'alice-password');
    if (login.status !== 200) throw new Error(`login failed: ${login.status}`);
    return { d, g, c, logs, oauth, connect };
  }

  /** The daemon with an OpenAI-shaped model that says "Thinking" and then never finishes its first answer; `reply` is its second. */
  async function startStalling(t: { teardown(fn: () => unknown): void }, reply: string) {
    const model = await openaiModel.start({
      apiKey: MODEL_KEY,
      script: [
        { kind: 'stall', text: 'Thinking' },
        { kind: 'reply', text: reply },
      ],
    });
    t.teardown(() => model.close());
    const started = await start(t, {
      AIRLOCK_MODEL_PROVIDER: 'openai',
      AIRLOCK_MODEL: 'gpt-e2e',
      AIRLOCK_MODEL_BASE_URL: model.url,
      AIRLOCK_MODEL_API_KEY: MODEL_KEY,
      // Only the stop API (or the kill) ends the stalled turn, never the model timeout.
      AIRLOCK_MODEL_TIMEOUT_S: '600',
    });
    return { ...started, model };
  }

  return { start, startStalling };
}
