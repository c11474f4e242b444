import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

function distRoot(): string {
  let d = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(d, 'tools', 'main.js')) && d !== dirname(d)) d = dirname(d);
  return d;
}

export interface McpHandle {
  client: Client;
  stderr: () => string;
  call(name: string, args: Record<string, unknown>): Promise<CallToolResult>;
  close(): Promise<void>;
}

/**
 * Spawn `node dist/<server>/main.js` as an MCP stdio server (the way the agent does) and
 * connect an SDK Client. The child gets only `env` (plus the SDK's default PATH/HOME…).
 * Registers teardown.
 */
export async function startMcp(
  t: { teardown(fn: () => unknown): void },
  server: 'tools' | 'extensions',
  env: Record<string, string>,
): Promise<McpHandle> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [join(distRoot(), server, 'main.js')],
    env,
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (c: Buffer) => {
    err += c.toString('utf8');
  });
  const client = new Client({ name: 'airlock-test', version: '0.0.0' });
  await client.connect(transport);
  let closed = false;
  const handle: McpHandle = {
    client,
    stderr: () => err,
    call: async (name, args) => (await client.callTool({ name, arguments: args })) as CallToolResult,
    async close() {
      if (closed) return;
      closed = true;
      await client.close();
    },
  };
  t.teardown(() => handle.close());
  return handle;
}

/** The error code a tool put in `_meta.error_code` (undefined on success). */
export function errorCode(r: CallToolResult): string | undefined {
  return r.isError ? ((r._meta as { error_code?: string } | undefined)?.error_code ?? 'NO_CODE') : undefined;
}
