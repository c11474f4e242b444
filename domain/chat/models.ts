/**
 * The models on offer for chats (docs/chat.md "A model per chat"), on either engine. An admin
 * keeps the list (web/admin-chat-models-routes.ts); each chat names one (`chat_sessions.model_id`,
 * null: the server's default). The entry `default` is the server's default model: it is written
 * from AIRLOCK_MODEL_* the first time a process needs it and follows the environment until an
 * admin changes it (then the database is the record). API keys are encrypted at rest with the
 * install's at-rest key, bound to the entry's id; they leave this module only in a ResolvedModel
 * (for the session preparer, which hands them to the egress gateway on the host), never in a view.
 */
import { AppError, type Config, type Encryptor } from '../../core/index.js';
import { nowIso, type Row, type Sql } from '../db/index.js';
import { logAction } from '../action-log.js';
import type { ChatModelView, ModelProvider } from '../../core/api-types.js';
import type { ChatModelChange, ChatModelInput } from '../../core/api-requests.js';

export type { ModelProvider };

/** The id of the server's default model (from AIRLOCK_MODEL_*). */
export const DEFAULT_MODEL_ID = 'default';

/** An entry as the admin API shows it: never the key, only whether there is one (core/api-types.ts). */
export type { ChatModelView };

/** What a chat's turn runs with: the model, its upstream and (host only) its key. */
export interface ResolvedModel {
  id: string;
  label: string;
  provider: ModelProvider;
  model: string;
  baseUrl?: string;
  /** The real key (host only: the egress gateway injects it; never in a sandbox, a response or a log). */
  apiKey?: string;
  contextTokens: number;
  /** It takes image input. */
  images: boolean;
  /** `<id>:<version>`: a sandbox prepared for another revision is replaced before the next turn. */
  revision: string;
}

/** What an admin may set (core/api-requests.ts: the zod schemas the admin API checks them with). */
export type { ChatModelChange, ChatModelInput };

const aad = (id: string) => `chat_model:${id}:api_key`;

function view(r: Row<'chat_models'>): ChatModelView {
  return {
    id: r.id,
    label: r.label,
    provider: r.provider,
    model: r.model,
    base_url: r.base_url,
    has_key: !!r.api_key_enc,
    context_tokens: r.context_tokens,
    images: !!r.images,
    enabled: !!r.enabled,
    default: r.id === DEFAULT_MODEL_ID,
    env_managed: !!r.env_managed,
    version: r.version,
    created_at: r.created_at,
    updated_at: r.updated_at,
    price_input_per_mtok: r.price_input_per_mtok,
    price_output_per_mtok: r.price_output_per_mtok,
    price_currency: r.price_currency,
  };
}

function resolved(enc: Encryptor, r: Row<'chat_models'>): ResolvedModel {
  return {
    id: r.id,
    label: r.label,
    provider: r.provider,
    model: r.provider === 'demo' ? 'demo' : r.model,
    ...(r.base_url ? { baseUrl: r.base_url } : {}),
    ...(r.api_key_enc ? { apiKey: enc.decrypt(r.api_key_enc, aad(r.id)) } : {}),
    contextTokens: r.context_tokens,
    images: !!r.images,
    revision: `${r.id}:${r.version}`,
  };
}

/** The environment's model, as the `default` entry's fields. */
function fromEnv(m: Readonly<Config['model']>) {
  return {
    label: m.provider === 'demo' ? 'Demo model' : m.model,
    provider: m.provider,
    model: m.provider === 'demo' ? 'demo' : m.model,
    base_url: m.baseUrl ?? null,
    context_tokens: m.contextTokens,
    images: m.images ? 1 : 0,
  };
}

/** Processes that already brought the default in line with their environment (one check per database handle). */
const synced = new WeakMap<Sql, Promise<void>>();

/**
 * Make sure the `default` entry exists (written from AIRLOCK_MODEL_*) and, while no admin has
 * changed it, matches this process's environment (a changed env takes effect at the next start).
 */
export function ensureDefaultModel(db: Sql, enc: Encryptor, env: Readonly<Config['model']>): Promise<void> {
  let p = synced.get(db);
  if (!p) {
    p = syncDefault(db, enc, env);
    synced.set(db, p);
    p.catch(() => synced.delete(db));
  }
  return p;
}

async function syncDefault(db: Sql, enc: Encryptor, env: Readonly<Config['model']>): Promise<void> {
  const want = fromEnv(env);
  const key = env.apiKey?.reveal();
  const row = await db.selectFrom('chat_models').selectAll().where('id', '=', DEFAULT_MODEL_ID).executeTakeFirst();
  if (!row) {
    // Two nodes at once: one insert wins, the other's is ignored.
    await db
      .insertInto('chat_models')
      .values({
        id: DEFAULT_MODEL_ID,
        ...want,
        api_key_enc: key ? enc.encrypt(key, aad(DEFAULT_MODEL_ID)) : null,
        enabled: 1,
        env_managed: 1,
      })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    return;
  }
  if (!row.env_managed) return;
  const cur = resolved(enc, row);
  const same =
    row.label === want.label &&
    row.provider === want.provider &&
    row.model === want.model &&
    row.base_url === want.base_url &&
    row.context_tokens === want.context_tokens &&
    row.images === want.images &&
    cur.apiKey === key;
  if (same) return;
  await db
    .updateTable('chat_models')
    .set({
      ...want,
      api_key_enc: key ? enc.encrypt(key, aad(DEFAULT_MODEL_ID)) : null,
      version: row.version + 1,
      updated_at: nowIso(),
    })
    .where('id', '=', DEFAULT_MODEL_ID)
    .where('env_managed', '=', 1)
    .execute();
}

export async function listChatModels(db: Sql): Promise<ChatModelView[]> {
  const rows = await db.selectFrom('chat_models').selectAll().orderBy('created_at').orderBy('id').execute();
  // The default first, then in the order they were added.
  return rows.map(view).sort((a, b) => Number(b.default) - Number(a.default));
}

export async function getChatModel(db: Sql, id: string): Promise<ChatModelView | undefined> {
  const r = await db.selectFrom('chat_models').selectAll().where('id', '=', id).executeTakeFirst();
  return r && view(r);
}

const notFound = () => new AppError('ERR_CHAT_MODEL_NOT_FOUND', 'no such model');

export async function createChatModel(db: Sql, enc: Encryptor, m: ChatModelInput): Promise<ChatModelView> {
  if (await getChatModel(db, m.id))
    throw new AppError('ERR_CHAT_MODEL_EXISTS', `a model with the id "${m.id}" exists already`);
  const r = await db
    .insertInto('chat_models')
    .values({
      id: m.id,
      label: m.label,
      provider: m.provider,
      model: m.provider === 'demo' ? 'demo' : m.model,
      base_url: m.base_url ?? null,
      api_key_enc: m.api_key ? enc.encrypt(m.api_key, aad(m.id)) : null,
      context_tokens: m.context_tokens,
      images: m.images ? 1 : 0,
      enabled: m.enabled === false ? 0 : 1,
      env_managed: 0,
      price_input_per_mtok: m.price_input_per_mtok ?? null,
      price_output_per_mtok: m.price_output_per_mtok ?? null,
      price_currency: m.price_currency ?? null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  await checkPrices(db, r);
  return view(r);
}

/**
 * Change an entry: `api_key` absent keeps the key, null removes it. The default cannot be
 * disabled. Any change ends `env_managed` (the admin's entry is the record) and bumps `version`.
 */
export async function updateChatModel(db: Sql, enc: Encryptor, id: string, c: ChatModelChange): Promise<ChatModelView> {
  const row = await db.selectFrom('chat_models').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) throw notFound();
  if (id === DEFAULT_MODEL_ID && c.enabled === false)
    throw new AppError('ERR_CHAT_MODEL_DEFAULT', 'the default model cannot be disabled or deleted');
  const set: Record<string, unknown> = { env_managed: 0, version: row.version + 1, updated_at: nowIso() };
  for (const k of [
    'label',
    'provider',
    'model',
    'context_tokens',
    'price_input_per_mtok',
    'price_output_per_mtok',
    'price_currency',
  ] as const)
    if (c[k] !== undefined) set[k] = c[k];
  if (c.base_url !== undefined) set.base_url = c.base_url;
  if (c.enabled !== undefined) set.enabled = c.enabled ? 1 : 0;
  if (c.images !== undefined) set.images = c.images ? 1 : 0;
  if (c.api_key !== undefined) set.api_key_enc = c.api_key ? enc.encrypt(c.api_key, aad(id)) : null;
  if ((set.provider ?? row.provider) === 'demo') set.model = 'demo';
  await db.updateTable('chat_models').set(set).where('id', '=', id).execute();
  await checkPrices(db, (await db.selectFrom('chat_models').selectAll().where('id', '=', id).executeTakeFirst())!);
  return (await getChatModel(db, id))!;
}

/**
 * One currency per install (docs/usage.md "Cost"): a priced entry names its currency, and it is the
 * one every other priced entry names, so that costs add up. Checked in the caller's transaction
 * after the write (a refusal rolls it back).
 */
async function checkPrices(db: Sql, r: Row<'chat_models'>): Promise<void> {
  if (r.price_input_per_mtok === null && r.price_output_per_mtok === null) return;
  if (!r.price_currency)
    throw new AppError('ERR_VALIDATION', 'price_currency: required with a price (e.g. USD).', {
      details: {
        problems: [{ field: 'price_currency', message: 'price_currency: required with a price (e.g. USD).' }],
      },
    });
  const other = await db
    .selectFrom('chat_models')
    .select(['id', 'price_currency'])
    .where('id', '!=', r.id)
    .where('price_currency', 'is not', null)
    .where('price_currency', '!=', r.price_currency)
    .where((eb) => eb.or([eb('price_input_per_mtok', 'is not', null), eb('price_output_per_mtok', 'is not', null)]))
    .executeTakeFirst();
  if (other)
    throw new AppError(
      'ERR_USAGE_CURRENCY_MISMATCH',
      `the model "${other.id}" is priced in ${other.price_currency}: every priced model uses one currency`,
    );
}

/** Delete an entry (not the default); its chats fall back to the default (their model_id set null here, in the caller's transaction). Returns how many chats fell back. */
export async function deleteChatModel(db: Sql, id: string): Promise<number> {
  if (id === DEFAULT_MODEL_ID)
    throw new AppError('ERR_CHAT_MODEL_DEFAULT', 'the default model cannot be disabled or deleted');
  if (!(await getChatModel(db, id))) throw notFound();
  const moved = await db
    .updateTable('chat_sessions')
    .set({ model_id: null })
    .where('model_id', '=', id)
    .executeTakeFirst();
  await db.deleteFrom('chat_models').where('id', '=', id).execute();
  return Number(moved.numUpdatedRows);
}

/**
 * How many chats name this model. A chat on the default stores no model (null, setSessionModel):
 * those are the default's, so its count is not 0 (issue 41).
 */
export async function chatsUsing(db: Sql, id: string): Promise<number> {
  const r = await db
    .selectFrom('chat_sessions')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where((eb) =>
      id === DEFAULT_MODEL_ID ? eb.or([eb('model_id', 'is', null), eb('model_id', '=', id)]) : eb('model_id', '=', id),
    )
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/**
 * The model a chat runs with: its own when it names one that exists and is enabled, else the
 * server's default (a chat whose model was disabled or deleted falls back to it).
 */
export async function resolveModel(
  db: Sql,
  enc: Encryptor,
  env: Readonly<Config['model']>,
  modelId: string | null | undefined,
): Promise<ResolvedModel> {
  await ensureDefaultModel(db, enc, env);
  if (modelId && modelId !== DEFAULT_MODEL_ID) {
    const r = await db
      .selectFrom('chat_models')
      .selectAll()
      .where('id', '=', modelId)
      .where('enabled', '=', 1)
      .executeTakeFirst();
    if (r) return resolved(enc, r);
  }
  return resolved(
    enc,
    await db.selectFrom('chat_models').selectAll().where('id', '=', DEFAULT_MODEL_ID).executeTakeFirstOrThrow(),
  );
}

/** The model of a chat by its id (a chat not stored yet runs with the default). */
export async function sessionModel(
  db: Sql,
  enc: Encryptor,
  env: Readonly<Config['model']>,
  sessionId: string,
): Promise<ResolvedModel> {
  const s = await db.selectFrom('chat_sessions').select('model_id').where('id', '=', sessionId).executeTakeFirst();
  return resolveModel(db, enc, env, s?.model_id);
}

/** A model by revision (`<id>:<version>`), only while the entry still has that version: an adopted sandbox's key. */
export async function modelAtRevision(db: Sql, enc: Encryptor, revision: string): Promise<ResolvedModel | undefined> {
  const i = revision.lastIndexOf(':');
  const r = await db.selectFrom('chat_models').selectAll().where('id', '=', revision.slice(0, i)).executeTakeFirst();
  return r && `${r.id}:${r.version}` === revision ? resolved(enc, r) : undefined;
}

/** The ids of the enabled entries (a chat naming another runs with the default). */
export async function enabledModelIds(db: Sql): Promise<Set<string>> {
  const rows = await db.selectFrom('chat_models').select('id').where('enabled', '=', 1).execute();
  return new Set(rows.map((r) => r.id));
}

/** Set a chat's model (null: the default). */
export async function setSessionModel(db: Sql, sessionId: string, modelId: string | null): Promise<void> {
  await db
    .updateTable('chat_sessions')
    .set({ model_id: modelId === DEFAULT_MODEL_ID ? null : modelId })
    .where('id', '=', sessionId)
    .execute();
}

/** Set a chat's model (checked by the caller first) with its action-log entry, in the caller's transaction. */
export async function recordPick(trx: Sql, userId: number, sessionId: string, modelId: string): Promise<void> {
  await setSessionModel(trx, sessionId, modelId);
  await logAction(trx, {
    event: 'chat.model_changed',
    actorId: userId,
    subjectId: userId,
    data: { session_id: sessionId, model_id: modelId },
  });
}
