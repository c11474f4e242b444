import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as the fake upstream received it. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export interface FakeUpstream {
  url: string;
  port: number;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

/**
 * A small Google-shaped upstream for proxy tests: Gmail send, Sheets values.get, Drive
 * files.list, and OpenAI / Anthropic style model endpoints. Records method, path, headers
 * and body of every request. A request carrying `x-test-echo: 1` gets its own
 * Authorization / x-api-key echoed back in a response header and in the body, which is
 * how tests prove the proxy scrubs the real token before the child sees it.
 */
export async function start(): Promise<FakeUpstream> {
  const requests: RecordedRequest[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const url = req.url ?? '/';
      requests.push({ method: req.method ?? '', path: url, headers: { ...req.headers }, body });
      const path = url.split('?')[0];
      const echo = req.headers['x-test-echo'] === '1';
      const seen = String(req.headers.authorization ?? req.headers['x-api-key'] ?? '');
      let status = 200;
      let out: unknown;
      if (req.method === 'POST' && path === '/gmail/v1/users/me/messages/send') {
        out = { id: `msg-${requests.length}`, threadId: `thr-${requests.length}`, labelIds: ['SENT'] };
      } else if (req.method === 'GET' && /^\/v4\/spreadsheets\/[^/]+\/values\/[^/]+$/.test(path)) {
        const range = decodeURIComponent(path.split('/').pop()!);
        out = {
          range,
          majorDimension: 'ROWS',
          values: [
            ['region', 'sales'],
            ['north', '10'],
            ['south', '20'],
          ],
        };
      } else if (req.method === 'GET' && path === '/drive/v3/files') {
        out = {
          kind: 'drive#fileList',
          files: [{ id: 'sheet-1', name: 'Sales', mimeType: 'application/vnd.google-apps.spreadsheet' }],
        };
      } else if (req.method === 'POST' && /\/chat\/completions$/.test(path)) {
        out = {
          id: 'cmpl-1',
          object: 'chat.completion',
          choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
        };
      } else if (req.method === 'POST' && /\/v1\/messages$/.test(path)) {
        out = {
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          content: [{ type: 'text', text: 'ok' }],
          stop_reason: 'end_turn',
        };
      } else {
        status = 404;
        out = { error: { code: 404, message: 'Not Found', status: 'NOT_FOUND' } };
      }
      const headers: Record<string, string> = { 'content-type': 'application/json; charset=UTF-8' };
      if (echo) {
        headers['x-echo-authorization'] = seen;
        out = { ...(out as object), echoed_authorization: seen };
      }
      const text = JSON.stringify(out);
      headers['content-length'] = String(Buffer.byteLength(text));
      res.writeHead(status, headers);
      res.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    close: () =>
      (closing ??= new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}
