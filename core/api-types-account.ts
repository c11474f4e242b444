/**
 * The answers about a user's own data (the connected workspace account, memory entries): zod
 * schemas with types of the same name. domain/accounts.ts and domain/memories.ts build them, the
 * route definitions (web/routes/platform.ts) name the schemas, pages import the types only.
 */
import { z } from 'zod';

/** GET /api/account: the connected workspace account, never its tokens. */
export const AccountView = z.union([
  z.strictObject({ connected: z.literal(false) }),
  z.strictObject({
    connected: z.literal(true),
    provider: z.string(),
    email: z.string().nullable(),
    scopes: z.array(z.string()),
    connected_at: z.string(),
    access_expires_at: z.string().nullable(),
    offline: z.boolean(),
  }),
]);
export type AccountView = z.infer<typeof AccountView>;

/** DELETE /api/account. */
export const AccountDisconnected = z.strictObject({
  connected: z.literal(false),
  revoked_at_provider: z.boolean().nullable(),
});
export type AccountDisconnected = z.infer<typeof AccountDisconnected>;

/** One memory entry (domain/memories.ts). */
export const MemoryEntry = z.strictObject({
  id: z.number(),
  content: z.string(),
  source: z.string(),
  created_at: z.string(),
});
export type MemoryEntry = z.infer<typeof MemoryEntry>;

/** GET /api/memories. */
export const MemoryList = z.strictObject({ memories: z.array(MemoryEntry) });
export type MemoryList = z.infer<typeof MemoryList>;

/** GET /api/agent/memories: the entries the agent may read, and how many of each refused source were left out. */
export const AgentMemoryList = z.strictObject({
  memories: z.array(MemoryEntry),
  withheld: z.record(z.string(), z.number()),
});
export type AgentMemoryList = z.infer<typeof AgentMemoryList>;
