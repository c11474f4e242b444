import { Router, type Request } from 'express';
import { AppError, type Logger } from '../core/index.js';
import type { StoredTurn } from '../core/chat-history.js';
import { logAction } from '../domain/action-log.js';
import * as store from '../domain/chat/store.js';
import { createShare, liveShare, mayOpen, revokeShares, sharedTurns, type OpenShare } from '../domain/chat/shares.js';
import { attachmentNames } from '../domain/chat/export.js';
import { sumUsage } from '../domain/chat/transcript.js';
import type { WebContext } from './context.js';
import { onOwnedChat, ownedSessions, signedIn } from './chat-route-kit.js';
import { attachmentHeaders, attachmentPreview, readAttachment } from './chat-more-routes.js';
import { previewOf } from './upload-routes.js';
import { readUpload } from './workspace-files.js';
import type { ShareCreated, SharedChat, ShareState } from './share-api.js';

/**
 * Read-only links to a chat (docs/chat.md "Sharing a chat"), mounted at /api:
 * - the owner: GET/POST/DELETE /chat/sessions/:id/share (see whether it is shared, make a new
 *   link (revoking the old), revoke); another user's chat is 404 like a missing one;
 * - a viewer: GET /share/:token (the chat), GET /share/:token/attachments/:name (a chart its
 *   turns show), GET /share/:token/files/:name[/preview] (a file its prompts name). Signed in and
 *   of the owner's organisation (domain/chat/shares.ts mayOpen); everything else, a revoked link
 *   included, is 404 ERR_SHARE_NOT_FOUND. Nothing under /share writes: any other method is 404 too.
 */
export function shareRoutes(ctx: WebContext): Router {
  const r = Router();
  const db = ctx.database.sql;

  const owned = ownedSessions(db);

  r.get(
    '/chat/sessions/:id/share',
    ...onOwnedChat(owned, async (req, res, s) => {
      const live = await liveShare(db, s.id);
      const out: ShareState = { shared: !!live, created_at: live?.created_at ?? null };
      res.setHeader('Cache-Control', 'no-store');
      res.json(out);
    }),
  );

  r.post(
    '/chat/sessions/:id/share',
    ...onOwnedChat(owned, async (req, res, s) => {
      const made = await store.inTransaction(db, async (trx) => {
        const m = await createShare(trx, s);
        await logAction(trx, {
          event: 'chat.shared',
          actorId: req.user!.id,
          subjectId: req.user!.id,
          data: { session_id: s.id, share_id: m.share.id, replaced: m.revoked },
        });
        return m;
      });
      const out: ShareCreated = {
        shared: true,
        created_at: made.share.created_at,
        token: made.token,
        url: `${ctx.config.publicOrigin}/#/share/${made.token}`,
      };
      res.setHeader('Cache-Control', 'no-store');
      res.status(201).json(out);
    }),
  );

  r.delete(
    '/chat/sessions/:id/share',
    ...onOwnedChat(owned, async (req, res, s) => {
      await store.inTransaction(db, async (trx) => {
        const n = await revokeShares(trx, s.id);
        if (n)
          await logAction(trx, {
            event: 'chat.share_revoked',
            actorId: req.user!.id,
            subjectId: req.user!.id,
            data: { session_id: s.id, revoked: n },
          });
      });
      res.status(204).end();
    }),
  );

  viewerRoutes(r, ctx);
  return r;
}

const gone = () => new AppError('ERR_SHARE_NOT_FOUND', 'no such shared chat');

/** A prompt's "Attached: uploads/a.csv, uploads/b.png" line (the chat page adds it; web/ui/src/chat-files.tsx). */
const ATTACHED_RE = /\n\nAttached: ((?:uploads\/[A-Za-z0-9._-]+(?:, )?)+)$/;

function filesNamed(turns: readonly StoredTurn[]): Set<string> {
  const out = new Set<string>();
  for (const t of turns) {
    const m = ATTACHED_RE.exec(t.prompt);
    if (m) for (const n of m[1]!.split(', ')) out.add(n.replace(/^uploads\//, ''));
  }
  return out;
}

/** The viewer's routes: GET only, each through mayOpen, each file only if the shared turns name it. */
function viewerRoutes(r: Router, ctx: WebContext): void {
  const db = ctx.database.sql;
  const open = async (req: Request): Promise<{ o: OpenShare; turns: StoredTurn[] }> => {
    const o = await mayOpen(db, String(req.params.token), req.user!.id);
    if (!o) throw gone();
    return { o, turns: await sharedTurns(db, o.share) };
  };
  /** The shared chat's file `:name`, read from its owner's workspace: only one its turns name (else 404, like a wrong link). */
  const namedFile = async <T>(
    req: Request,
    named: (turns: StoredTurn[]) => Iterable<string>,
    read: (dataDir: string, userId: number, name: string, log: Logger) => Promise<T>,
  ) => {
    const { o, turns } = await open(req);
    const name = String(req.params.name);
    if (!new Set(named(turns)).has(name)) throw gone();
    const data = await read(ctx.config.dataDir, o.owner.id, name, req.log).catch(() => {
      throw gone();
    });
    return { name, data };
  };
  const noStore = { 'Cache-Control': 'private, no-store' };

  r.get(
    '/share/:token',
    ...signedIn(async (req, res) => {
      const { o, turns } = await open(req);
      const out: SharedChat = {
        title: o.session.title,
        owner: o.owner.name,
        shared_at: o.share.created_at,
        turns,
        usage: sumUsage(turns),
      };
      res.set(noStore).json(out);
    }),
  );

  r.get(
    ['/share/:token/attachments/:name', '/share/:token/attachments/:name/preview'],
    ...signedIn(async (req, res) => {
      const { name, data: buf } = await namedFile(req, attachmentNames, readAttachment);
      if (req.path.endsWith('/preview')) return void res.set(noStore).json(attachmentPreview(name, buf));
      res.set({ ...noStore, ...attachmentHeaders(name) }).end(buf);
    }),
  );

  r.get(
    ['/share/:token/files/:name', '/share/:token/files/:name/preview'],
    ...signedIn(async (req, res) => {
      const { name, data: file } = await namedFile(req, filesNamed, readUpload);
      res.set(noStore);
      if (req.path.endsWith('/preview')) return void res.json(previewOf(name, file.data));
      const image = file.kind === 'png' || file.kind === 'jpeg';
      res.set({
        'Content-Type': image ? `image/${file.kind}` : 'application/octet-stream',
        'Content-Security-Policy': "default-src 'none'; sandbox",
      });
      if (!image) res.setHeader('Content-Disposition', `attachment; filename="${name}"`);
      res.end(file.data);
    }),
  );

  // Nothing else under /share: no write, no other read (the same 404 as a wrong link).
  r.use('/share', (_req, _res, next) => next(gone()));
}

/** The request log's path: a share link's token is a secret and never logged. */
export function loggedPath(path: string): string {
  return path.replace(/^\/api\/share\/[^/]+/, '/api/share/:token');
}
