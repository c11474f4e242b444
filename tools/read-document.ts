import { spawn } from 'node:child_process';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { AppError } from '../core/errors.js';
import { decodeText, DOCUMENT_KINDS, kindOfName, sniff } from '../core/tables/index.js';
import { docxText, pptxText, type DocumentText } from '../core/tables/ooxml.js';
import type { ToolsEnv } from './env.js';
import { readUploaded, uploadsDirOf } from './read-file-table.js';
import { ToolError, runTool, toolOk } from './result.js';

/** Default and largest text returned by one call (characters). */
export const DOCUMENT_CHARS_DEFAULT = 50_000;
export const DOCUMENT_CHARS_MAX = 200_000;
/** pdftotext's bounds: wall time, address space, and the text it may print. */
const PDFTOTEXT_TIMEOUT_MS = 20_000;
const PDFTOTEXT_MEMORY_KB = 512 * 1024;
const PDFTOTEXT_OUTPUT_MAX = 16 * 1024 * 1024;
const DOCUMENT_RE = /\.(pdf|docx|pptx|txt|md|markdown|json)$/i;

/**
 * A PDF's text by poppler's pdftotext (in the sandbox image), one part per page (pdftotext ends
 * each page with a form feed). Run under a memory limit (ulimit -v), a wall clock and an output
 * cap, so a PDF bomb ends as ERR_DOCUMENT_INVALID, never as a stuck or swollen sandbox.
 */
export function pdfText(path: string, pdftotext = 'pdftotext'): Promise<DocumentText> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      '/bin/sh',
      ['-c', `ulimit -v ${PDFTOTEXT_MEMORY_KB}; exec "$0" -enc UTF-8 -q "$1" -`, pdftotext, path],
      { stdio: ['ignore', 'pipe', 'ignore'], detached: true },
    );
    const chunks: Buffer[] = [];
    let bytes = 0;
    let why: string | undefined;
    const kill = (w: string) => {
      why ??= w;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // gone
      }
    };
    const timer = setTimeout(
      () => kill(`reading it took longer than ${PDFTOTEXT_TIMEOUT_MS / 1000} s`),
      PDFTOTEXT_TIMEOUT_MS,
    );
    child.stdout.on('data', (c: Buffer) => {
      bytes += c.length;
      if (bytes > PDFTOTEXT_OUTPUT_MAX)
        return kill(`its text is larger than ${PDFTOTEXT_OUTPUT_MAX / (1024 * 1024)} MB`);
      chunks.push(c);
    });
    child.on('error', (err) =>
      reject(new ToolError('ERR_DOCUMENT_INVALID', `the PDF reader is not available (${err.message})`)),
    );
    child.on('close', (code) => {
      clearTimeout(timer);
      if (why || code !== 0)
        return reject(
          new ToolError(
            'ERR_DOCUMENT_INVALID',
            `the PDF cannot be read: ${why ?? 'it is damaged, encrypted or not a PDF'}`,
          ),
        );
      const pages = Buffer.concat(chunks).toString('utf8').split('\f');
      if (pages.length > 1 && pages.at(-1) === '') pages.pop();
      resolve({ parts: pages.map((text, i) => ({ label: `page ${i + 1}`, text })) });
    });
  });
}

/** Text parts of an uploaded document by kind. */
async function documentText(name: string, path: string, data: Buffer): Promise<DocumentText> {
  const kind = kindOfName(name);
  if (!kind || !DOCUMENT_KINDS.includes(kind))
    throw new ToolError(
      'ERR_UPLOAD_TYPE',
      `${name} is not a document read_document reads (PDF, DOCX, PPTX, TXT, Markdown, JSON); use read_file_table for CSV and XLSX`,
    );
  if (!sniff(kind, data))
    throw new ToolError(
      'ERR_UPLOAD_MISMATCH',
      `${name} is not a ${kind.toUpperCase()} file (its first bytes say otherwise)`,
    );
  if (kind === 'pdf') return pdfText(path);
  if (kind === 'docx') return docxText(data);
  if (kind === 'pptx') return pptxText(data);
  return { parts: [{ label: 'document', text: decodeText(data).text }] };
}

/** The parts asked for (`pages` "2" or "2-5", 1-based), joined with a heading per part, cut at `max` with a marker. */
export function renderParts(
  doc: DocumentText,
  pages: string | undefined,
  max: number,
): { text: string; parts: number; shown: string; truncated: boolean } {
  let from = 1;
  let to = doc.parts.length;
  if (pages) {
    const m = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(pages.trim());
    if (!m) throw new ToolError('ERR_TOOL_INVALID_INPUT', 'pages must look like "3" or "2-5"');
    from = Number(m[1]);
    to = Math.min(doc.parts.length, Number(m[2] ?? m[1]));
    if (from < 1 || from > doc.parts.length || to < from)
      throw new ToolError(
        'ERR_TOOL_INVALID_INPUT',
        `the document has ${doc.parts.length} part(s) (${doc.parts[0]?.label.split(' ')[0] ?? 'page'}s); ask for pages within 1-${doc.parts.length}`,
      );
  }
  const many = doc.parts.length > 1;
  let text = doc.parts
    .slice(from - 1, to)
    .map((p) => (many ? `=== ${p.label} ===\n${p.text.trimEnd()}` : p.text.trimEnd()))
    .join('\n\n');
  const truncated = text.length > max;
  if (truncated) {
    const rest = text.length - max;
    text = `${text.slice(0, max)}\n\n[… cut here: ${rest} more characters. Ask for fewer pages (pages: "N-M") to read the rest.]`;
  }
  return { text, parts: doc.parts.length, shown: `${from}-${to}`, truncated };
}

/**
 * read_document: the text of a PDF, DOCX, PPTX, TXT, Markdown or JSON file the user uploaded
 * (/workspace/uploads), with its page or slide structure, bounded, with a marker where cut.
 */
export function registerReadDocument(
  server: McpServer,
  env: ToolsEnv,
  log: { info(o: object, m: string): void; error(o: object, m: string): void },
): void {
  server.registerTool(
    'read_document',
    {
      description:
        'Read the text of a document the user uploaded into this chat: PDF, DOCX, PPTX, TXT, Markdown or JSON (give its name, e.g. "contract.pdf"). Pages (PDF) and slides (PPTX) are marked "=== page N ==="; DOCX headings start with #. Long documents are cut with a marker: ask for pages "N-M" to read on.',
      inputSchema: {
        name: z.string().min(1).max(200),
        pages: z.string().max(20).optional(),
        max_chars: z.number().int().min(1000).max(DOCUMENT_CHARS_MAX).optional(),
      },
      outputSchema: {
        name: z.string(),
        parts: z.number().int(),
        shown: z.string(),
        truncated: z.boolean(),
        text: z.string(),
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args) =>
      runTool(log, 'read_document', async () => {
        const name = args.name.replace(/^(\/workspace\/)?uploads\//, '');
        const dir = uploadsDirOf(env);
        const data = await readUploaded(dir, name, DOCUMENT_RE, 'document');
        try {
          const doc = await documentText(name, `${dir}/${name}`, data);
          const r = renderParts(doc, args.pages, args.max_chars ?? DOCUMENT_CHARS_DEFAULT);
          log.info(
            { tool: 'read_document', parts: r.parts, chars: r.text.length, truncated: r.truncated },
            'document read',
          );
          return toolOk({ name, ...r });
        } catch (err) {
          if (err instanceof AppError) throw new ToolError(err.code, err.message);
          throw err;
        }
      }),
  );
}
