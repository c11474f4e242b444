/**
 * Tool discovery: list a connector's tools from its server (tools/list, every page) and check
 * each before anything is saved (docs/connectors.md "Tools"): a plain-identifier name that fits
 * the prefixed-name limit, unique, a JSON object schema that compiles and is under the size
 * limit, and not too many of them. A tool that breaks a rule is left out with its reason; a list
 * that breaks the whole (too many, two of one name) is refused.
 */
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { JsonSchemaType } from '@modelcontextprotocol/sdk/validation';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  AppError,
  CONNECTOR_TOOL_RE,
  MAX_CONNECTOR_TOOLS,
  MAX_PREFIXED_TOOL_NAME,
  MAX_TOOL_DESCRIPTION,
  MAX_TOOL_SCHEMA_BYTES,
  connectorToolName,
  type ConnectorTool,
  type ConnectorToolMode,
} from '../../core/index.js';
import { cleanMessage } from './upstream.js';

/** Pages of tools/list read at most (a server that pages forever is cut off). */
const MAX_PAGES = 20;
const LIST_TIMEOUT_MS = 15_000;

export interface ListedTool {
  name: string;
  description?: string;
  inputSchema: unknown;
  annotations?: { readOnlyHint?: boolean };
}

export interface Discovered {
  tools: ConnectorTool[];
  skipped: { name: string; reason: string }[];
}

/** Every tool the server lists, all pages, bounded. */
export async function listAllTools(client: Client, secrets: readonly string[]): Promise<ListedTool[]> {
  const out: ListedTool[] = [];
  let cursor: string | undefined;
  try {
    for (let page = 0; page < MAX_PAGES; page++) {
      const r = await client.listTools(cursor ? { cursor } : undefined, { timeout: LIST_TIMEOUT_MS });
      out.push(...(r.tools as ListedTool[]));
      if (out.length > MAX_CONNECTOR_TOOLS) break;
      cursor = r.nextCursor;
      if (!cursor) break;
    }
  } catch (err) {
    throw new AppError('ERR_CONNECTOR_DISCOVERY', `tools/list failed: ${cleanMessage(err, secrets)}`);
  }
  return out;
}

let ajv: AjvJsonSchemaValidator | undefined;

/** Why an input schema cannot be offered, or null. */
function schemaProblem(schema: unknown): string | null {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return 'input schema is not a JSON object';
  if ((schema as { type?: unknown }).type !== 'object') return 'input schema is not of type object';
  const bytes = Buffer.byteLength(JSON.stringify(schema));
  if (bytes > MAX_TOOL_SCHEMA_BYTES)
    return `input schema is ${bytes} bytes, over the limit of ${MAX_TOOL_SCHEMA_BYTES}`;
  try {
    (ajv ??= new AjvJsonSchemaValidator()).getValidator(schema as JsonSchemaType);
  } catch (err) {
    return `input schema does not compile: ${(err as Error).message.slice(0, 120)}`;
  }
  return null;
}

/**
 * Check the listed tools and give each its mode: the mode it had (a refresh keeps the admin's
 * choices), else 'enabled' for a tool the server marks read-only and 'ask' for any other (a new
 * tool that may change something asks the user first until an admin decides).
 */
export function checkTools(connectorId: string, listed: ListedTool[], previous: readonly ConnectorTool[]): Discovered {
  if (listed.length > MAX_CONNECTOR_TOOLS)
    throw new AppError('ERR_CONNECTOR_TOOLS_INVALID', `the server lists more than ${MAX_CONNECTOR_TOOLS} tools`);
  const seen = new Set<string>();
  const tools: ConnectorTool[] = [];
  const skipped: Discovered['skipped'] = [];
  const modes = new Map(previous.map((t) => [t.name, t.mode]));
  for (const t of listed) {
    const name = typeof t.name === 'string' ? t.name : '';
    if (seen.has(name))
      throw new AppError('ERR_CONNECTOR_TOOLS_INVALID', `the server lists two tools named "${name.slice(0, 64)}"`);
    seen.add(name);
    if (!CONNECTOR_TOOL_RE.test(name)) {
      skipped.push({
        name: name.slice(0, 64),
        reason: 'name is not a plain identifier (letters, digits, _ and -, no __, at most 48)',
      });
      continue;
    }
    if (connectorToolName(connectorId, name).length > MAX_PREFIXED_TOOL_NAME) {
      skipped.push({ name, reason: `prefixed name is over ${MAX_PREFIXED_TOOL_NAME} characters` });
      continue;
    }
    const problem = schemaProblem(t.inputSchema);
    if (problem) {
      skipped.push({ name, reason: problem });
      continue;
    }
    const mode: ConnectorToolMode = modes.get(name) ?? (t.annotations?.readOnlyHint === true ? 'enabled' : 'ask');
    const description = typeof t.description === 'string' ? t.description.slice(0, MAX_TOOL_DESCRIPTION) : '';
    tools.push({ name, description, input_schema: t.inputSchema as Record<string, unknown>, mode });
  }
  return { tools, skipped };
}
