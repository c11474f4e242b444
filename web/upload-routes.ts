import { join } from 'node:path';
import { readCappedBody } from '../core/read-body.js';
import { Router, type Request } from 'express';
import { z } from 'zod';
import { AppError, type Logger } from '../core/index.js';
import { decodeText, kindOfName, readTable, sniff, type FileKind } from '../core/tables/index.js';
import { ooxmlHas } from '../core/tables/ooxml.js';
import { asyncHandler, requireUser, type WebContext } from './context.js';
import type * as store from '../domain/chat/store.js';
import { listUploads, readUpload, safeName, saveUpload, UPLOAD_MAX_BYTES } from './workspace-files.js';
import type { FilePreview, UploadAnswer, UploadList } from './chat-api.js';

/** The first rows a preview shows. */
export const PREVIEW_ROWS = 20;
/** The start of a JSON, TXT or Markdown file a preview shows. */
export const PREVIEW_TEXT_BYTES = 4096;

/** What the daemon lends the upload routes: the user's workspace, made and mounted with its quota. */
export interface WorkspacePort {
  ensure(userId: number): string;
}

export type Preview = FilePreview;

const PREVIEW_QUERY = z.object({ sheet: z.string().max(100).optional() }).strict();

const tooLarge = () =>
  new AppError('ERR_UPLOAD_TOO_LARGE', `the file is larger than ${UPLOAD_MAX_BYTES / (1024 * 1024)} MB`);

/** Refuse what is not what its name says, or a table the readers refuse (zip bomb, bad encoding, huge rows). */
export function checkUpload(name: string, data: Buffer): Preview {
  const kind = kindOfName(name)!;
  if (!sniff(kind, data))
    throw new AppError(
      'ERR_UPLOAD_MISMATCH',
      `${name} is not a ${kind.toUpperCase()} file (its first bytes say otherwise)`,
    );
  const text = kind === 'csv' || kind === 'txt' || kind === 'md' || kind === 'json';
  if (text && decodeText(data).replaced)
    throw new AppError(
      'ERR_UPLOAD_ENCODING',
      `${name} is not UTF-8 (or UTF-16 with a BOM): save it as UTF-8 and upload it again`,
    );
  checkDocument(name, kind, data);
  return previewOf(name, data);
}

/** A document the agent could not read is refused up front: a DOCX/PPTX without its main part (or a zip bomb), JSON that does not parse. */
function checkDocument(name: string, kind: FileKind, data: Buffer): void {
  const part = kind === 'docx' ? 'word/document.xml' : kind === 'pptx' ? 'ppt/presentation.xml' : undefined;
  if (part && !ooxmlHas(data, part))
    throw new AppError('ERR_UPLOAD_MISMATCH', `${name} is not a ${kind.toUpperCase()} file (it has no ${part})`);
  if (kind === 'json') {
    try {
      JSON.parse(decodeText(data).text);
    } catch {
      throw new AppError('ERR_UPLOAD_MISMATCH', `${name} is not valid JSON`);
    }
  }
}

export function previewOf(name: string, data: Buffer, sheet?: string): Preview {
  const kind = kindOfName(name)!;
  if (kind === 'json' || kind === 'txt' || kind === 'md') {
    const { text } = decodeText(data.subarray(0, PREVIEW_TEXT_BYTES));
    return {
      name,
      kind,
      text: {
        text: data.length > PREVIEW_TEXT_BYTES ? text.replace(/\uFFFD$/, '') : text,
        truncated: data.length > PREVIEW_TEXT_BYTES,
      },
    };
  }
  if (kind !== 'csv' && kind !== 'xlsx') return { name, kind };
  const t = readTable(name, data, { maxRows: PREVIEW_ROWS, sheet });
  return {
    name,
    kind,
    table: {
      rows: t.rows,
      truncated: t.truncated,
      notes: t.notes,
      sheet: t.sheet,
      ...(t.sheets ? { sheets: t.sheets } : {}),
    },
  };
}

function fileName(req: Request): string {
  const header = req.get('x-file-name');
  if (!header)
    throw new AppError('ERR_UPLOAD_BODY', 'say the file name in the X-File-Name header (percent-encoded UTF-8)');
  let raw: string;
  try {
    raw = decodeURIComponent(header);
  } catch {
    throw new AppError('ERR_UPLOAD_NAME', 'the X-File-Name header is not percent-encoded UTF-8');
  }
  if (raw.length > 255) throw new AppError('ERR_UPLOAD_NAME', 'the file name is longer than 255 characters');
  return safeName(raw);
}

/**
 * POST /sessions/:id/files (the body is the file, application/octet-stream, its name in
 * X-File-Name), GET /sessions/:id/files (the user's uploads), GET /sessions/:id/files/:name (the
 * bytes; images inline, tables as a download) and GET …/:name/preview; the same under /files for
 * a chat not made yet. Only the chat's owner: another user's chat is 404 like a missing one. Files live in the owner's workspace
 * (/workspace/uploads in the sandbox), shared by the user's chats.
 */
export function uploadRoutes(
  ctx: WebContext,
  o: { owned: (userId: number, id: string) => Promise<store.ChatSessionRow>; workspaces?: WorkspacePort; log: Logger },
): Router {
  const r = Router();
  const root = join(ctx.config.dataDir, 'workspaces');

  // Only the chat's owner; /files (no chat yet: a new chat's composer) is the user's own workspace too.
  const own = async (req: Request) => {
    if (req.params.id !== undefined) await o.owned(req.user!.id, String(req.params.id));
  };

  r.post(
    ['/sessions/:id/files', '/files'],
    requireUser,
    asyncHandler(async (req, res) => {
      await own(req);
      const name = fileName(req);
      const data = await readCappedBody(req, UPLOAD_MAX_BYTES, tooLarge);
      if (!data.length) throw new AppError('ERR_UPLOAD_BODY', 'the file is empty');
      const preview = checkUpload(name, data);
      (o.workspaces ?? ctx.services.workspaces).ensure(req.user!.id);
      const file = await saveUpload(root, String(req.user!.id), name, data);
      req.log.info({ event: 'upload_saved', kind: file.kind, bytes: file.bytes }, 'file uploaded');
      const answer: UploadAnswer = { file, preview: { ...preview, name: file.name } };
      res.status(201).json(answer);
    }),
  );

  r.get(
    ['/sessions/:id/files', '/files'],
    requireUser,
    asyncHandler(async (req, res) => {
      await own(req);
      res.setHeader('Cache-Control', 'no-store');
      res.json({ files: await listUploads(root, String(req.user!.id)) } satisfies UploadList);
    }),
  );

  r.get(
    ['/sessions/:id/files/:name/preview', '/files/:name/preview'],
    requireUser,
    asyncHandler(async (req, res) => {
      await own(req);
      const q = PREVIEW_QUERY.safeParse(req.query);
      if (!q.success) throw new AppError('ERR_VALIDATION', 'the only query parameter is sheet');
      const { data } = await readUpload(ctx.config.dataDir, req.user!.id, String(req.params.name), req.log);
      res.setHeader('Cache-Control', 'no-store');
      res.json(previewOf(String(req.params.name), data, q.data.sheet));
    }),
  );

  r.get(
    ['/sessions/:id/files/:name', '/files/:name'],
    requireUser,
    asyncHandler(async (req, res) => {
      await own(req);
      const name = String(req.params.name);
      const { kind, data } = await readUpload(ctx.config.dataDir, req.user!.id, name, req.log);
      const image = kind === 'png' || kind === 'jpeg';
      if (image && !sniff(kind, data)) throw new AppError('ERR_UPLOAD_NOT_FOUND', `no uploaded file ${name}`);
      res.setHeader('Content-Type', image ? `image/${kind}` : 'application/octet-stream');
      if (!image) res.setHeader('Content-Disposition', `attachment; filename="${name}"`);
      res.setHeader('Content-Security-Policy', "default-src 'none'; sandbox");
      res.setHeader('X-Content-Type-Options', 'nosniff');
      res.setHeader('Cache-Control', 'private, no-cache');
      res.end(data);
    }),
  );

  return r;
}
