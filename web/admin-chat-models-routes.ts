import type { Router } from 'express';
import { logAction } from '../domain/action-log.js';
import {
  chatsUsing,
  createChatModel,
  deleteChatModel,
  getChatModel,
  listChatModels,
  resolveModel,
  updateChatModel,
  type ChatModelView,
} from '../domain/chat/models.js';
import { inTransaction, type Sql } from '../domain/db/index.js';
import type { ChatModelAdminList, ChatModelAdminView } from './admin-api.js';
import { asyncHandler, type WebContext } from './context.js';
import { ChatModelChangeSchema, ChatModelCreateSchema } from '../core/api-requests.js';
import { problemsError } from './validate.js';
import { parseFields, superuserRouter } from './route-kit.js';

const CREATE = ChatModelCreateSchema;
const CHANGE = ChatModelChangeSchema;

/** openai and anthropic need their API's base URL (like AIRLOCK_MODEL_BASE_URL); demo needs none. */
function checkUpstream(m: { provider: string; base_url?: string | null }): void {
  if (m.provider !== 'demo' && !m.base_url)
    throw problemsError([
      { field: 'base_url', message: `base_url: required for the ${m.provider} provider (the API's base URL).` },
    ]);
}

async function adminView(db: Sql, m: ChatModelView): Promise<ChatModelAdminView> {
  return { ...m, chats: await chatsUsing(db, m.id) };
}

/**
 * /api/admin/chat-models (superuser, session + CSRF): the models on offer for chats (docs/chat.md
 * "A model per chat"). GET lists them (the default first, written from AIRLOCK_MODEL_* on first
 * use); POST adds one; PATCH changes one (any field but the id; `api_key` absent keeps the key);
 * DELETE removes one (not the default), its chats falling back to the default. Each change writes
 * its action-log entry in the same transaction. No answer and no log entry holds a key: only
 * `has_key`, and `key_changed` in the log.
 */
export function adminChatModelRoutes(ctx: WebContext): Router {
  const { r, db } = superuserRouter(ctx);
  const enc = ctx.encryptor;
  const ensureDefault = () => resolveModel(db, enc, ctx.config.model, null);

  r.get(
    '/',
    asyncHandler(async (_req, res) => {
      await ensureDefault();
      const models = await Promise.all((await listChatModels(db)).map((m) => adminView(db, m)));
      res.json({ models } satisfies ChatModelAdminList);
    }),
  );

  r.post(
    '/',
    asyncHandler(async (req, res) => {
      const body = parseFields(CREATE, req.body, 'a chat model');
      checkUpstream(body);
      await ensureDefault();
      const out = await inTransaction(db, async (trx) => {
        const m = await createChatModel(trx, enc, body);
        await logAction(trx, {
          event: 'chat_model.created',
          actorId: req.user!.id,
          subjectId: null,
          data: {
            id: m.id,
            provider: m.provider,
            model: m.model,
            base_url: m.base_url,
            has_key: m.has_key,
            context_tokens: m.context_tokens,
            enabled: m.enabled,
          },
        });
        return adminView(trx, m);
      });
      res.status(201).json(out satisfies ChatModelAdminView);
    }),
  );

  r.patch(
    '/:id',
    asyncHandler(async (req, res) => {
      const id = String(req.params.id);
      const change = parseFields(CHANGE, req.body, 'a chat model');
      await ensureDefault();
      const out = await inTransaction(db, async (trx) => {
        const before = await getChatModel(trx, id);
        if (before)
          checkUpstream({
            provider: change.provider ?? before.provider,
            base_url: change.base_url === undefined ? before.base_url : change.base_url,
          });
        const after = await updateChatModel(trx, enc, id, change);
        const fields = (Object.keys(change) as (keyof typeof change)[]).filter((k) => k !== 'api_key');
        const data: Record<string, unknown> = {
          id,
          fields,
          ...Object.fromEntries(fields.map((k) => [k, after[k as keyof ChatModelView]])),
        };
        if (change.api_key !== undefined) Object.assign(data, { key_changed: true, has_key: after.has_key });
        await logAction(trx, { event: 'chat_model.updated', actorId: req.user!.id, subjectId: null, data });
        return adminView(trx, after);
      });
      res.json(out satisfies ChatModelAdminView);
    }),
  );

  r.delete(
    '/:id',
    asyncHandler(async (req, res) => {
      const id = String(req.params.id);
      await ensureDefault();
      await inTransaction(db, async (trx) => {
        const moved = await deleteChatModel(trx, id);
        await logAction(trx, {
          event: 'chat_model.deleted',
          actorId: req.user!.id,
          subjectId: null,
          data: { id, chats_moved_to_default: moved },
        });
      });
      res.status(204).end();
    }),
  );
  return r;
}
