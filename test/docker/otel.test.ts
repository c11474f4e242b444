/**
 * OpenTelemetry export with real parts: a real daemon and sandbox, a scripted OpenAI-shaped model
 * that calls a tool going upstream through the proxy, and an OTLP/HTTP receiver on 127.0.0.1.
 * One trace per turn, its id the turn id; the tool span under the turn, the proxied request under
 * its tool, the model calls under the turn; the metrics arrive too; and no secret, prompt or
 * answer text is in anything exported (canary scan). Without the endpoint nothing is started.
 */
import t from 'tap';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createLogger,
  createMetrics,
  Encryptor,
  hashPassword,
  loadConfig,
  loadOrCreateEncryptionKey,
  WORKSPACE_SCOPES,
} from '../../core/index.js';
import { AccountStore } from '../../domain/accounts.js';
import { createUser } from '../../domain/users.js';
import { serve } from '../../daemon/serve.js';
import { startTelemetry } from '../../daemon/telemetry.js';
import * as google from '../../emulator/google.js';
import * as openaiModel from '../../emulator/model-openai.js';
import { Client } from '../helpers/client.js';
import { streamTurn, waitFor } from '../helpers/chat.js';
import { dataDir, dockerOrSkip, ensureTestImage, runtimeConfig, sweep, uniqueOwner } from './helpers.js';

const MODEL_KEY = 'sk-otel-model-key-canary-0123456789';
const PROMPT_CANARY = 'prompt-canary-7f3a9c find the sample sheet';
const ANSWER_CANARY = 'answer-canary-b81e2d';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: { key: string; value: Record<string, unknown> }[];
}

/** An OTLP/HTTP receiver (JSON): every body kept as text, spans flattened. */
async function receiver(t: { teardown(fn: () => unknown): void }) {
  const bodies: { path: string; text: string }[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      bodies.push({ path: req.url ?? '', text: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const spans = (): OtlpSpan[] =>
    bodies
      .filter((b) => b.path === '/v1/traces')
      .flatMap((b) =>
        (JSON.parse(b.text) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] }).resourceSpans.flatMap(
          (r) => r.scopeSpans.flatMap((s) => s.spans),
        ),
      );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bodies, spans };
}

const attr = (s: OtlpSpan, key: string) => {
  const v = s.attributes?.find((a) => a.key === key)?.value;
  return v ? Object.values(v)[0] : undefined;
};

t.test('without OTEL_EXPORTER_OTLP_ENDPOINT nothing is started', async (t) => {
  const config = loadConfig({ AIRLOCK_DATA_DIR: dataDir(t) });
  t.equal(startTelemetry(config, createLogger({ level: 'silent' }), createMetrics().registry), undefined);
});

const docker = await dockerOrSkip(t);
if (docker) {
  const image = await ensureTestImage(docker);

  t.test(
    'one trace per turn: the turn, its tool call with the proxied request, the model calls; no secret exported',
    async (t) => {
      const otlp = await receiver(t);
      const g = await google.start({
        userEmail: 'olive@example.test',
        seed: {
          spreadsheets: [
            {
              id: 'sheet-sample-1',
              name: 'Sample sales 2026',
              sheets: {
                Sales: [
                  ['Month', 'Sales'],
                  ['Jan', 3],
                ],
              },
            },
          ],
        },
      });
      t.teardown(() => g.close());
      const model = await openaiModel.start({
        apiKey: MODEL_KEY,
        script: [
          { kind: 'reply', tool_calls: [{ name: 'search_spreadsheets', arguments: { query: 'sample' } }] },
          { kind: 'reply', text: `Found it. ${ANSWER_CANARY}` },
          { kind: 'reply', text: `Second answer ${ANSWER_CANARY}` },
        ],
      });
      t.teardown(() => model.close());
      const dir = dataDir(t);
      const owner = uniqueOwner('otel');
      t.teardown(() => sweep(docker, owner));
      const config = runtimeConfig(dir, image, {
        AIRLOCK_PORT: '0',
        AIRLOCK_POOL_SIZE: '0',
        AGENT_USER_TOKEN_SECRET: 'otel-agent-user-token-secret-0123',
        MCP_INTERNAL_SECRET: 'otel-mcp-internal-secret-0123456789',
        AIRLOCK_MODEL_PROVIDER: 'openai',
        AIRLOCK_MODEL: 'gpt-otel',
        AIRLOCK_MODEL_BASE_URL: model.url,
        AIRLOCK_MODEL_API_KEY: MODEL_KEY,
        AIRLOCK_GOOGLE_MAIL_BASE_URL: g.url,
        AIRLOCK_GOOGLE_SHEETS_BASE_URL: g.url,
        AIRLOCK_GOOGLE_DRIVE_BASE_URL: g.url,
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_SERVICE_NAME: 'airlock-otel-test',
        OTEL_METRIC_EXPORT_INTERVAL: '500',
      });
      const d = await serve(config, { log: createLogger({ level: 'silent' }), runtime: { owner } });
      let closed = false;
      t.teardown(async () => {
        if (closed) return;
        await d.runtime?.close({ removeContainers: true });
        await d.close();
      });
      const olive = await createUser(d.database.sql, {
        username: 'olive',
        email: 'olive@example.test',
        passwordHash: await hashPassword('olive-password'),
      });
      await new AccountStore(
        d.database.sql,
        new Encryptor(loadOrCreateEncryptionKey(dir, config.encryptionKey)),
      ).connect(olive.id, {
        email: 'olive@example.test',
        scopes: [...WORKSPACE_SCOPES],
        accessToken: g.token,
        expiresAt: Date.now() + 3600_000,
      });
      const c = new Client(d.web.url);
      t.equal((await c.login('olive', 'olive-password')).status, 200);
      const first = await streamTurn(c, { message: PROMPT_CANARY });
      t.equal(first.events.at(-1)?.stop_reason, 'end_turn', JSON.stringify(first.events.at(-1)));
      const second = await streamTurn(c, { message: `again ${PROMPT_CANARY}`, session_id: first.sessionId });
      t.equal(second.events.at(-1)?.stop_reason, 'end_turn');
      const turnIds = [first.headers.get('x-chat-turn-id')!, second.headers.get('x-chat-turn-id')!];
      // Shutdown flushes what the batch processor still holds.
      await waitFor(
        () => otlp.bodies.some((b) => b.path === '/v1/metrics' && b.text.includes('airlock_turns_total')),
        'metrics exported',
        30_000,
      );
      await d.runtime?.close({ removeContainers: true });
      await d.close();
      closed = true;

      const spans = otlp.spans();
      const roots = spans.filter((s) => s.name === 'chat.turn');
      t.same(
        roots.map((s) => s.traceId).sort(),
        turnIds.map((id) => id.replace(/-/g, '')).sort(),
        'one trace per turn, its id the turn id',
      );
      const [t1, t2] = turnIds.map((id) => spans.filter((s) => s.traceId === id.replace(/-/g, '')));
      const root1 = t1.find((s) => s.name === 'chat.turn')!;
      t.equal(attr(root1, 'airlock.stop_reason'), 'end_turn');
      t.equal(attr(root1, 'enduser.id'), String(olive.id), 'the user');
      const tool = t1.find((s) => s.name === 'tool search_spreadsheets');
      t.ok(tool, 'the tool call is a span');
      t.equal(tool?.parentSpanId, root1.spanId, 'under its turn');
      const search = t1.find((s) => s.name === 'proxy search');
      t.ok(search, 'the proxied Drive request is a span');
      t.equal(search?.parentSpanId, tool?.spanId, 'under its tool call');
      t.equal(attr(search!, 'url.template'), '/search/drive/v3/files', 'with its path template');
      t.equal(attr(search!, 'http.response.status_code'), 200);
      const modelCalls1 = t1.filter((s) => s.name === 'model call');
      t.equal(modelCalls1.length, 2, 'two model calls in the tool turn');
      t.ok(
        modelCalls1.every((s) => s.parentSpanId === root1.spanId),
        'under the turn',
      );
      t.same(t2.map((s) => s.name).sort(), ['chat.turn', 'model call'], 'the text turn: the turn and one model call');

      const exported = otlp.bodies.map((b) => b.text).join('\n');
      t.match(exported, /airlock-otel-test/, 'the service name');
      for (const [what, secret] of [
        ['model key', MODEL_KEY],
        ['workspace token', g.token],
        ['prompt', 'prompt-canary-7f3a9c'],
        ['answer', ANSWER_CANARY],
        ['sheet content', 'Sample sales 2026'],
      ] as const) {
        t.notOk(exported.includes(secret), `no ${what} in any export`);
      }
    },
  );
}
