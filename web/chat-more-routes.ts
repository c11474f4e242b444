import { join } from 'node:path';
import { promises as fsp } from 'node:fs';
import { Router } from 'express';
import { type Logger, AppError } from '../core/index.js';
import type { ChatExport, ChatHistory, FilePreview } from './chat-api.js';
import type { WebContext } from './context.js';
import { onOwnedChat, signedIn, type OwnedSession } from './chat-route-kit.js';
import * as store from '../domain/chat/store.js';
import { effectiveIds } from './chat-model-routes.js';
import { branchTranscript, sumUsage } from '../domain/chat/transcript.js';
import { attachmentNames, chatMarkdown } from '../domain/chat/export.js';
import { BeneathError, openBeneath } from './open-beneath.js';
import { validateBody } from './validate.js';
import { PinSessionSchema, SwitchBranchSchema } from '../core/api-requests.js';
import { previewOf } from './upload-routes.js';

/** A chart (`<uuid>.png`) or a file run_python wrote under out/, kept as `<uuid>.<ext>` (tools/attachments.ts keepOutFiles). */
const ATTACHMENT_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.(png|svg|csv|xlsx|json|txt)$/;
const MAX_ATTACHMENT_BYTES = 5 * 1024 * 1024;

/** How each kind is served: images shown, the rest downloaded. */
const ATTACHMENT_TYPES: Record<string, { type: string; inline: boolean }> = {
  png: { type: 'image/png', inline: true },
  svg: { type: 'image/svg+xml', inline: true },
  csv: { type: 'text/csv; charset=utf-8', inline: false },
  xlsx: { type: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', inline: false },
  json: { type: 'application/json; charset=utf-8', inline: false },
  txt: { type: 'text/plain; charset=utf-8', inline: false },
};

/**
 * The headers an attachment is served with, for its owner and on a share link alike: its type by
 * its extension; a sandboxed CSP with nothing allowed (an SVG's script never runs, even opened on
 * its own); no sniffing; a file that is not an image as a download.
 */
export function attachmentHeaders(name: string): Record<string, string> {
  const t = ATTACHMENT_TYPES[ATTACHMENT_RE.exec(name)?.[1] ?? 'png']!;
  return {
    'Content-Type': t.type,
    'Content-Security-Policy': "default-src 'none'; sandbox",
    'X-Content-Type-Options': 'nosniff',
    // No file name here: the page's link names the download after the file the code wrote.
    ...(t.inline ? {} : { 'Content-Disposition': 'attachment' }),
  };
}

/**
 * The preview the chat shows of a kept file that is not an image: a CSV's or XLSX's first rows,
 * the start of a JSON or TXT file (web/upload-routes.ts previewOf, as for uploads). An image has
 * none (the chat shows the image itself): 404 like a missing file.
 */
export function attachmentPreview(name: string, data: Buffer): FilePreview {
  if (/\.(png|svg)$/.test(name))
    throw new AppError('ERR_CHAT_ATTACHMENT_NOT_FOUND', 'an image has no preview: open the image itself');
  return previewOf(name, data);
}

/**
 * A rasterized chart from the user's own workspace (what rasterize_chart wrote). The agent owns
 * everything under its workspace, so every component below <data>/workspaces is opened without
 * following links (openBeneath), and only a regular file owned by the workspace's owner (the
 * sandbox user) and under the cap is served. ERR_CHAT_ATTACHMENT_NOT_FOUND otherwise.
 */
export async function readAttachment(dataDir: string, userId: number, name: string, log: Logger): Promise<Buffer> {
  if (!ATTACHMENT_RE.test(name)) throw new AppError('ERR_CHAT_ATTACHMENT_NOT_FOUND', 'no such attachment');
  const root = join(dataDir, 'workspaces');
  const userDir = String(userId);
  let fh: fsp.FileHandle | undefined;
  try {
    // The workspace folder's owner is the sandbox user (root-owned parent: the agent cannot swap it).
    const owner = (await fsp.lstat(join(root, userDir))).uid;
    ({ fh } = await openBeneath(root, [userDir, '.agent-attachments', name], {
      ownerUid: owner,
      maxBytes: MAX_ATTACHMENT_BYTES,
    }));
    return await fh.readFile();
  } catch (err) {
    if (err instanceof BeneathError)
      log.warn({ event: 'attachment_refused', reason: err.reason }, 'attachment refused');
    throw new AppError('ERR_CHAT_ATTACHMENT_NOT_FOUND', 'no such attachment');
  } finally {
    await fh?.close();
  }
}

/** The branch shown of a chat with the model it runs with, as GET …/messages answers it. */
export async function chatHistory(ctx: WebContext, s: store.ChatSessionRow): Promise<ChatHistory> {
  const shown = await store.messages(ctx.database.sql, s.id);
  const model_id = (await effectiveIds(ctx))(s.model_id);
  return {
    session: { id: s.id, title: s.title, created_at: s.created_at, updated_at: s.updated_at, model_id },
    turns: shown,
    usage: sumUsage(shown),
  };
}

/**
 * GET /attachments/:name (a chart or a kept file) and …/preview, GET /sessions/:id/export?format=markdown|json (the branch
 * shown), POST /sessions/:id/branch (show another branch). `owned` answers 404 for another
 * user's chat; `busy` says whether a turn runs in it.
 */
export function chatMoreRoutes(
  ctx: WebContext,
  o: { owned: OwnedSession; busy: (sessionId: string) => boolean },
): Router {
  const r = Router();
  const db = ctx.database.sql;

  r.get(
    '/attachments/:name',
    ...signedIn(async (req, res) => {
      const name = String(req.params.name);
      const buf = await readAttachment(ctx.config.dataDir, req.user!.id, name, req.log);
      res.set({ ...attachmentHeaders(name), 'Cache-Control': 'private, max-age=3600' }).end(buf);
    }),
  );

  r.get(
    '/attachments/:name/preview',
    ...signedIn(async (req, res) => {
      const name = String(req.params.name);
      const buf = await readAttachment(ctx.config.dataDir, req.user!.id, name, req.log);
      res.set({ 'Cache-Control': 'private, max-age=3600' }).json(attachmentPreview(name, buf));
    }),
  );

  // Switch the branch shown (the "< 2/3 >" of a turn): the chat's head becomes the newest turn
  // below the one named. Refused while a turn runs, like a new message.
  r.post(
    '/sessions/:id/branch',
    ...onOwnedChat(o.owned, async (req, res, s) => {
      const body = validateBody(SwitchBranchSchema, req.body);
      if (o.busy(s.id)) throw new AppError('ERR_SESSION_BUSY', 'a turn is already running in this session');
      await store.switchBranch(db, s.id, body.turn_id);
      res.json(await chatHistory(ctx, s));
    }),
  );

  // Pin a chat to the top of the list, or unpin it.
  r.put(
    '/sessions/:id/pin',
    ...onOwnedChat(o.owned, async (req, res, s) => {
      const body = validateBody(PinSessionSchema, req.body);
      await store.setPinned(db, s.id, body.pinned);
      res.status(204).end();
    }),
  );

  r.get(
    '/sessions/:id/export',
    ...onOwnedChat(o.owned, async (req, res, s) => {
      const format = req.query.format === undefined ? 'markdown' : req.query.format;
      if (format !== 'markdown' && format !== 'json')
        throw new AppError('ERR_VALIDATION', 'format must be markdown or json');
      const turns = await store.messages(db, s.id);
      const at = new Date().toISOString();
      const file = `chat-${s.id.slice(0, 8)}.${format === 'json' ? 'json' : 'md'}`;
      res.setHeader('Content-Disposition', `attachment; filename="${file}"`);
      res.setHeader('Cache-Control', 'no-store');
      if (format === 'markdown') {
        res.type('text/markdown; charset=utf-8').send(chatMarkdown(s, turns, at));
        return;
      }
      const attachments: ChatExport['attachments'] = [];
      for (const name of attachmentNames(turns)) {
        // A chart the workspace no longer has is left out (its name stays in the turns).
        const buf = await readAttachment(ctx.config.dataDir, req.user!.id, name, req.log).catch(() => undefined);
        if (buf)
          attachments.push({ name, content_type: 'image/png', bytes: buf.length, data_base64: buf.toString('base64') });
      }
      const transcript = await branchTranscript(db, s.id, Number.MAX_SAFE_INTEGER, undefined, Infinity);
      const out: ChatExport = {
        format: 'airlock-chat',
        version: 1,
        exported_at: at,
        session: { id: s.id, title: s.title, created_at: s.created_at, updated_at: s.updated_at },
        turns,
        transcript,
        attachments,
      };
      res.json(out);
    }),
  );

  return r;
}
