import type { Router } from 'express';
import { z } from 'zod';
import { MAIL_DOMAIN } from '../core/config.js';
import { logAction } from '../domain/action-log.js';
import { inTransaction } from '../domain/db/index.js';
import { serverMailPolicy, updateServerMailPolicy } from '../domain/mail/index.js';
import type { ServerMailPolicyView } from './admin-api.js';
import { asyncHandler, type WebContext } from './context.js';
import { parseFields, superuserRouter } from './route-kit.js';

const domains = z
  .array(z.string().max(253).regex(MAIL_DOMAIN, 'must be a domain name in lower case, without @ (e.g. corp.example)'))
  .max(500);

/** PUT /api/admin/mail-policy: any of the fields; the limits as AIRLOCK_MAIL_* allows them. */
export const MailPolicyChangeSchema = z
  .object({
    allow_domains: domains,
    block_domains: domains,
    other: z.enum(['allow', 'ask', 'block']),
    max_recipients: z.number().int().min(1).max(500),
    max_per_hour: z.number().int().min(1).max(100_000),
    approval_timeout_s: z.number().int().min(5).max(105),
  })
  .partial()
  .strict();

/**
 * /api/admin/mail-policy (superuser, session + CSRF): the server-wide send policy kept in the
 * database (docs/proxy.md#send-policy). GET reads it (seeded from AIRLOCK_MAIL_* on first use);
 * PUT changes any of its fields, writes `mail.policy_changed` to the action log with the change in
 * the same transaction, and answers the new policy. A change applies to every node at the next
 * send and session start.
 */
export function adminMailPolicyRoutes(ctx: WebContext): Router {
  const { r, db } = superuserRouter(ctx);
  r.get(
    '/',
    asyncHandler(async (_req, res) => {
      res.json((await serverMailPolicy(db, ctx.config.mail)) satisfies ServerMailPolicyView);
    }),
  );
  r.put(
    '/',
    asyncHandler(async (req, res) => {
      const change = parseFields(MailPolicyChangeSchema, req.body, 'the send policy');
      const actor = req.user!.id;
      const out = await inTransaction(db, async (trx) => {
        const before = await serverMailPolicy(trx, ctx.config.mail);
        const after = await updateServerMailPolicy(trx, ctx.config.mail, change, actor);
        const changed = Object.keys(change).filter(
          (k) => JSON.stringify(before[k as keyof typeof before]) !== JSON.stringify(after[k as keyof typeof after]),
        );
        await logAction(trx, {
          event: 'mail.policy_changed',
          actorId: actor,
          subjectId: null,
          data: { fields: changed, ...Object.fromEntries(changed.map((k) => [k, after[k as keyof typeof after]])) },
        });
        return after;
      });
      res.json(out satisfies ServerMailPolicyView);
    }),
  );
  return r;
}
