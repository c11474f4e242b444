/**
 * The parts of the MCP tool servers' contract the agent child reads and sends (core/sandbox-protocol.ts
 * re-exports it).
 */
import { z } from 'zod';
import { JsonObjectSchema, StringMapSchema } from './sandbox-events.js';

// ---------------------------------------------------------------- agent child ⇄ MCP tool servers (stdio)
// The MCP SDK checks the JSON-RPC envelope; these are the parts of a tools/call result the
// agent reads, checked again where they enter our code.

export interface McpContentItem {
  type: string;
  text?: string;
  mimeType?: string;
  data?: string;
}
export interface McpToolResult {
  content: McpContentItem[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}
export const McpToolResultSchema: z.ZodType<McpToolResult> = z.object({
  content: z
    .array(
      z.looseObject({
        type: z.string(),
        text: z.string().optional(),
        mimeType: z.string().optional(),
        data: z.string().optional(),
      }),
    )
    .default([]),
  structuredContent: JsonObjectSchema.optional(),
  isError: z.boolean().optional(),
});

/**
 * agent child → each of its MCP servers, once at claim: the tool env (TOOL_ENV_NAMES) and the
 * working folder. A JSON-RPC request of our own beside MCP's; a server that does not know it
 * answers "method not found" and keeps the env it was started with.
 */
export const MCP_CONFIGURE_METHOD = 'airlock/configure';
/**
 * agent child → MCP server, in a tools/call's `_meta`: the id of the model's tool call. A tool
 * sends it on as the `X-Airlock-Call` header of its upstream requests, so the proxy's audit trail
 * ties each request to its call (the proxy strips it before the upstream).
 */
export const CALL_ID_META = 'airlock/call_id';
export const CALL_ID_HEADER = 'x-airlock-call';
export interface McpConfigureParams {
  env: Record<string, string>;
  cwd?: string;
}
export const McpConfigureRequestSchema = z.object({
  method: z.literal(MCP_CONFIGURE_METHOD),
  params: z.object({ env: StringMapSchema, cwd: z.string().optional() }),
});
