/**
 * A model per chat, the user's side (docs/chat.md "A model per chat"): the picker's list, the
 * model a chat runs with, and choosing one (for a new chat in POST /messages, or switching in
 * PATCH /sessions/:id, both in web/chat-routes.ts, which call in here).
 */
import { Router } from 'express';
import { AppError } from '../core/index.js';
import {
  enabledModelIds,
  getChatModel,
  listChatModels,
  resolveModel,
  sessionModel,
  DEFAULT_MODEL_ID,
  type ResolvedModel,
} from '../domain/chat/models.js';
import { defaultModelOf } from '../domain/user-admin.js';
import { effectiveAgentPolicy, policyAllows } from '../domain/identity/agent-policy.js';
import type { ChatModelInfo, ChatModelList } from './chat-api.js';
import type { WebContext } from './context.js';
import { ownedSessions, signedIn } from './chat-route-kit.js';

/** What a model id in a request may look like (the admin API's ids). */
export { MODEL_ID_PATTERN } from '../core/api-requests.js';

/** The model a chat runs with (its own, else the default); for a turn's budget and its sandbox. */
export function chatModel(ctx: WebContext, sessionId: string): Promise<ResolvedModel> {
  return sessionModel(ctx.database.sql, ctx.encryptor, ctx.config.model, sessionId);
}

/**
 * Check that the user may choose this model: an enabled entry (else 404 ERR_CHAT_MODEL_NOT_FOUND,
 * a disabled one reads like a missing one) that the user's agent policy allows (else 403
 * ERR_POLICY_MODEL_DENIED).
 */
export async function checkPick(ctx: WebContext, userId: number, modelId: string): Promise<void> {
  const db = ctx.database.sql;
  await resolveModel(db, ctx.encryptor, ctx.config.model, null); // the default exists
  const m = await getChatModel(db, modelId);
  if (!m || !m.enabled) throw new AppError('ERR_CHAT_MODEL_NOT_FOUND', `no model "${modelId}" is on offer`);
  if (!policyAllows(await effectiveAgentPolicy(db, userId), 'model', m.model)) {
    throw new AppError(
      'ERR_POLICY_MODEL_DENIED',
      `your organisation's agent policy does not allow the model ${m.model}; choose another`,
    );
  }
}

/** Set a chat's model (checked by checkPick first) with its action-log entry (domain/chat/models.ts). */
export { recordPick } from '../domain/chat/models.js';

/** The id a chat runs with as the API shows it: its own while enabled, else the default's. */
export async function effectiveIds(ctx: WebContext): Promise<(stored: string | null) => string> {
  const enabled = await enabledModelIds(ctx.database.sql);
  return (stored) => (stored && enabled.has(stored) ? stored : DEFAULT_MODEL_ID);
}

/** GET /api/chat/models and GET /api/chat/model (mounted in the chat router). */
export function chatModelRoutes(ctx: WebContext): Router {
  const r = Router();
  const db = ctx.database.sql;

  // The picker: the enabled models the user's agent policy allows, the default first.
  r.get(
    '/models',
    ...signedIn(async (req, res) => {
      await resolveModel(db, ctx.encryptor, ctx.config.model, null);
      const policy = await effectiveAgentPolicy(db, req.user!.id);
      const all = await listChatModels(db);
      const models = all
        .filter((m) => m.enabled && policyAllows(policy, 'model', m.model))
        .map((m) => ({
          id: m.id,
          label: m.label,
          provider: m.provider,
          model: m.model,
          context_tokens: m.context_tokens,
          default: m.default,
        }));
      // The user's own default (Settings), while it is on offer to them: a new chat starts with it.
      const own = await defaultModelOf(db, req.user!.id);
      res.json({
        models,
        default_id: DEFAULT_MODEL_ID,
        preferred_id: models.some((m) => m.id === own) ? own : null,
      } satisfies ChatModelList);
    }),
  );

  // Which model answers: a chat's (?session_id=) or the default (the page names the offline demo model as such).
  r.get(
    '/model',
    ...signedIn(async (req, res) => {
      const sid = req.query.session_id === undefined ? undefined : String(req.query.session_id);
      let m: ResolvedModel;
      if (sid) {
        await ownedSessions(db)(req.user!.id, sid);
        m = await chatModel(ctx, sid);
      } else m = await resolveModel(db, ctx.encryptor, ctx.config.model, null);
      const out: ChatModelInfo = {
        id: m.id,
        label: m.label,
        provider: m.provider,
        model: m.model,
        demo: m.provider === 'demo',
        context_tokens: m.contextTokens,
      };
      res.json(out);
    }),
  );
  return r;
}
