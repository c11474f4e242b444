import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import {
  readAttachment,
  readAttachmentTitle,
  chartFileName,
  uniqueNames,
  OUT_ATTACHMENT_RE,
  OUT_TYPES,
  ATTACHMENTS_PER_MESSAGE_MAX,
  ATTACHMENTS_TOTAL_MAX_BYTES,
} from './attachments.js';
import type { ToolsEnv } from './env.js';
import { callUpstream } from './http.js';
import { CALL_ID_META } from '../core/sandbox-protocol.js';
import { buildMessage, type InlinePng } from './mime.js';
import { NOT_CONNECTED_MESSAGE, ToolError, runTool, toolOk } from './result.js';
import { noElicitationValidator } from '../core/mcp-configure.js';
import { registerReadFileTable } from './read-file-table.js';
import { registerRunPython, workspaceOf } from './run-python.js';
import { saveSheetCsv } from './save-sheet.js';
import { registerReadDocument } from './read-document.js';

export const TOOLS_SERVER_NAME = 'airlock-workspace-core';
export const TOOLS_SERVER_VERSION = '0.1.0';
export const SHEET_ROWS_MAX = 1000;
/** Memory entries whose source is refused to the agent (docs/rules.md#data-access-rules, rule 7). */
export const REFUSED_MEMORY_SOURCE = 'bi';
const SPREADSHEET_MIME = 'application/vnd.google-apps.spreadsheet';

interface Log {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

function notConnected(): ToolError {
  return new ToolError('ERR_TOOL_NOT_CONNECTED', NOT_CONNECTED_MESSAGE);
}

/** Drive q string literal: backslash-escape \ and '. */
function driveLiteral(s: string): string {
  return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

// A header-safe single line (CR/LF would let a value smuggle headers).
const oneLine = (max: number) =>
  z
    .string()
    .max(max)
    .regex(/^[^\r\n]*$/, 'must be a single line');
const address = z.email().max(254);

/** The model's tool call id the agent passed in `_meta` (for the proxy's audit trail), when well-formed. */
function callIdOf(meta: Record<string, unknown> | undefined): string | undefined {
  const v = meta?.[CALL_ID_META];
  return typeof v === 'string' && /^[A-Za-z0-9_.:-]{1,128}$/.test(v) ? v : undefined;
}

/**
 * The workspace-suite core agent: fetch_sheet, search_spreadsheets, send_email, fetch_memory,
 * read_file_table.
 * Every tool is always listed; one whose route is not attached answers isError
 * ERR_TOOL_NOT_CONNECTED. The spreadsheet tools never use AGENT_USER_TOKEN.
 */
export function createToolsServer(env: ToolsEnv, log: Log): McpServer {
  const server = new McpServer(
    { name: TOOLS_SERVER_NAME, version: TOOLS_SERVER_VERSION },
    { jsonSchemaValidator: noElicitationValidator },
  );
  registerFetchSheet(server, env, log);
  registerSearchSpreadsheets(server, env, log);
  registerSendEmail(server, env, log);
  registerFetchMemory(server, env, log);

  // Tables of the files the user uploaded (tools/read-file-table.ts).
  registerReadFileTable(server, env, log);
  // Python in the sandbox, one interpreter per chat (tools/run-python.ts).
  registerRunPython(server, env, log);
  // Text of uploaded documents (tools/read-document.ts).
  registerReadDocument(server, env, log);

  return server;
}

function registerFetchSheet(server: McpServer, env: ToolsEnv, log: Log): void {
  server.registerTool(
    'fetch_sheet',
    {
      description:
        'Read cell values from a spreadsheet of the user\'s workspace account. Give the spreadsheet id (from search_spreadsheets) and an A1 range such as "Sheet1!A1:D20" or "Sheet1". With save_as ("name.csv") the rows are also saved as /workspace/sheets/name.csv for run_python.',
      inputSchema: {
        spreadsheet_id: z.string().regex(/^[A-Za-z0-9_-]{1,200}$/, 'a spreadsheet id: letters, digits, - and _'),
        range: oneLine(200).min(1),
        max_rows: z.number().int().min(1).max(SHEET_ROWS_MAX).optional(),
        save_as: z.string().max(100).optional(),
      },
      outputSchema: {
        range: z.string(),
        rows: z.array(z.array(z.string())),
        truncated: z.boolean(),
        saved_as: z.string().optional(),
      },
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    (args, extra) =>
      runTool(log, 'fetch_sheet', async () => {
        const route = env.sheets;
        if (!route) throw notConnected();
        const url = `${route.baseUrl}/v4/spreadsheets/${encodeURIComponent(args.spreadsheet_id)}/values/${encodeURIComponent(args.range)}`;
        const body = await callUpstream<{ range?: string; values?: unknown[][] }>(url, {
          bearer: route.apiKey,
          timeoutMs: env.timeoutMs,
          what: 'reading the sheet',
          callId: callIdOf(extra._meta),
        });
        const limit = args.max_rows ?? SHEET_ROWS_MAX;
        const values = Array.isArray(body.values) ? body.values : [];
        const rows = values
          .slice(0, limit)
          .map((r) => (Array.isArray(r) ? r.map((c) => (c === null || c === undefined ? '' : String(c))) : []));
        log.info({ tool: 'fetch_sheet', rows: rows.length }, 'sheet read');
        // save_as: the same rows as a CSV in /workspace/sheets/ for run_python (docs/tools.md#fetch_sheet).
        const saved = args.save_as ? await saveSheetCsv(workspaceOf(env), args.save_as, rows) : undefined;
        return toolOk({
          range: typeof body.range === 'string' ? body.range : args.range,
          rows,
          truncated: values.length > limit,
          ...(saved ? { saved_as: saved } : {}),
        });
      }),
  );
}

function registerSearchSpreadsheets(server: McpServer, env: ToolsEnv, log: Log): void {
  server.registerTool(
    'search_spreadsheets',
    {
      description:
        "Find spreadsheets in the user's workspace account whose name contains the query (empty query: most recent). Returns id, name and modified time.",
      inputSchema: {
        query: z
          .string()
          .max(200)
          .regex(/^[^\r\n]*$/, 'must be a single line'),
        max_results: z.number().int().min(1).max(100).optional(),
      },
      outputSchema: { files: z.array(z.object({ id: z.string(), name: z.string(), modified_time: z.string() })) },
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    (args, extra) =>
      runTool(log, 'search_spreadsheets', async () => {
        const route = env.search;
        if (!route) throw notConnected();
        const terms = [`mimeType = '${SPREADSHEET_MIME}'`, 'trashed = false'];
        if (args.query.trim()) terms.push(`name contains ${driveLiteral(args.query.trim())}`);
        const qs = new URLSearchParams({
          q: terms.join(' and '),
          pageSize: String(args.max_results ?? 20),
          orderBy: 'modifiedTime desc',
          fields: 'files(id,name,modifiedTime)',
        });
        const body = await callUpstream<{ files?: { id?: unknown; name?: unknown; modifiedTime?: unknown }[] }>(
          `${route.baseUrl}/drive/v3/files?${qs}`,
          {
            bearer: route.apiKey,
            timeoutMs: env.timeoutMs,
            callId: callIdOf(extra._meta),
            what: 'searching spreadsheets',
          },
        );
        const files = (Array.isArray(body.files) ? body.files : []).map((f) => ({
          id: String(f.id ?? ''),
          name: String(f.name ?? ''),
          modified_time: String(f.modifiedTime ?? ''),
        }));
        log.info({ tool: 'search_spreadsheets', count: files.length }, 'spreadsheets searched');
        return toolOk({ files });
      }),
  );
}

function registerSendEmail(server: McpServer, env: ToolsEnv, log: Log): void {
  server.registerTool(
    'send_email',
    {
      description:
        'Send an e-mail as the user. Give text and/or html. To include charts, first call rasterize_chart and pass the returned filename unchanged in attachments (or a PNG run_python wrote, as "out/name.png"); in html, show it with <img src="cid:FILENAME"> (for out/name.png the cid is out-name.png; images not referenced are appended). Files run_python wrote as out/name.csv, .xlsx, .svg, .json or .txt are attached as files.',
      inputSchema: {
        to: z.array(address).min(1).max(50),
        cc: z.array(address).max(50).optional(),
        bcc: z.array(address).max(50).optional(),
        subject: oneLine(998),
        text: z.string().max(200_000).optional(),
        html: z.string().max(500_000).optional(),
        attachments: z.array(z.string().max(300)).max(ATTACHMENTS_PER_MESSAGE_MAX).optional(),
      },
      outputSchema: { id: z.string(), thread_id: z.string(), attachments: z.number().int() },
      annotations: { destructiveHint: false, openWorldHint: true },
    },
    (args, extra) =>
      runTool(log, 'send_email', async () => {
        const route = env.mail;
        if (!route) throw notConnected();
        if (args.text === undefined && args.html === undefined)
          throw new ToolError('ERR_TOOL_INVALID_INPUT', 'give text or html for the message body');
        const names = args.attachments ?? [];
        if (new Set(names).size !== names.length)
          throw new ToolError('ERR_TOOL_INVALID_INPUT', 'an attachment is listed twice');
        // Every attachment is checked and read before anything is sent.
        const images: InlinePng[] = [];
        let total = 0;
        for (const name of names) {
          const content = await readAttachment(env.attachmentsDir, name);
          total += content.length;
          if (total > ATTACHMENTS_TOTAL_MAX_BYTES) {
            throw new ToolError(
              'ERR_TOOL_ATTACHMENT_TOO_LARGE',
              `the attachments together exceed ${ATTACHMENTS_TOTAL_MAX_BYTES / (1024 * 1024)} MB`,
            );
          }
          // A PNG from run_python keeps its own name; its Content-ID has no slash (out-<name>).
          const out = OUT_ATTACHMENT_RE.exec(name);
          images.push(
            out
              ? { filename: `out-${out[1]}`, name: out[1], content, type: OUT_TYPES[out[2]!] }
              : { filename: name, name: chartFileName(await readAttachmentTitle(env.attachmentsDir, name)), content },
          );
        }
        // The message names each chart after its title (the UUID stays its Content-ID).
        uniqueNames(images.map((i) => i.name!)).forEach((n, i) => (images[i].name = n));
        const raw = await buildMessage(args, images, route.from);
        const sent = await callUpstream<{ id?: unknown; threadId?: unknown }>(
          `${route.baseUrl}/mail/v1/users/me/messages/send`,
          {
            method: 'POST',
            bearer: route.apiKey,
            body: { raw: raw.toString('base64url') },
            timeoutMs: env.timeoutMs,
            what: 'sending the e-mail',
            callId: callIdOf(extra._meta),
          },
        );
        log.info({ tool: 'send_email', attachments: images.length, bytes: raw.length }, 'mail sent');
        return toolOk({
          id: String(sent.id ?? ''),
          thread_id: String(sent.threadId ?? ''),
          attachments: images.length,
        });
      }),
  );
}

function registerFetchMemory(server: McpServer, env: ToolsEnv, log: Log): void {
  server.registerTool(
    'fetch_memory',
    {
      description:
        "Read the user's saved memory entries (newest first), optionally only those containing a text or from one source. Entries from the BI source are never available.",
      inputSchema: {
        query: z.string().max(200).optional(),
        source: z
          .string()
          .regex(/^[a-z][a-z0-9_.-]{0,31}$/)
          .optional(),
        limit: z.number().int().min(1).max(200).optional(),
      },
      outputSchema: {
        memories: z.array(
          z.object({ id: z.number(), content: z.string(), source: z.string(), created_at: z.string() }),
        ),
        withheld: z.number().int(),
      },
      annotations: { readOnlyHint: true },
    },
    (args, extra) =>
      runTool(log, 'fetch_memory', async () => {
        // Refused here first, so the request is never made (RBAC rule 7); the backend refuses too.
        if (args.source === REFUSED_MEMORY_SOURCE) {
          throw new ToolError(
            'ERR_TOOL_MEMORY_REFUSED',
            `memory entries with source "${REFUSED_MEMORY_SOURCE}" are not available to the assistant`,
          );
        }
        const route = env.agentApi;
        if (!route)
          throw new ToolError(
            'ERR_TOOL_MEMORY_UNAVAILABLE',
            'memory is not available in this chat session; start a new chat session',
          );
        const qs = new URLSearchParams({ limit: String(args.limit ?? 50) });
        if (args.query) qs.set('q', args.query);
        if (args.source) qs.set('source', args.source);
        let body: {
          memories?: { id: number; content: string; source: string; created_at: string }[];
          withheld?: Record<string, number>;
        };
        try {
          body = await callUpstream(`${route.baseUrl}/api/agent/memories?${qs}`, {
            bearer: route.token,
            timeoutMs: env.timeoutMs,
            callId: callIdOf(extra._meta),
            what: 'reading memories',
            on401: 'the memory access of this chat session expired; start a new chat session',
          });
        } catch (err) {
          if (err instanceof ToolError && err.code === 'ERR_TOOL_TOKEN_EXPIRED')
            throw new ToolError('ERR_TOOL_MEMORY_UNAVAILABLE', err.message);
          if (err instanceof ToolError && err.code === 'ERR_TOOL_FORBIDDEN')
            throw new ToolError('ERR_TOOL_MEMORY_REFUSED', err.message);
          throw err;
        }
        const all = Array.isArray(body.memories) ? body.memories : [];
        // Defence in depth: never pass a `bi` entry on, even if the backend sent one.
        const memories = all
          .filter((m) => m && m.source !== REFUSED_MEMORY_SOURCE)
          .map((m) => ({
            id: Number(m.id),
            content: String(m.content),
            source: String(m.source),
            created_at: String(m.created_at),
          }));
        const withheld = Number(body.withheld?.[REFUSED_MEMORY_SOURCE] ?? 0) + (all.length - memories.length);
        log.info({ tool: 'fetch_memory', count: memories.length, withheld }, 'memories read');
        return toolOk({ memories, withheld });
      }),
  );
}
