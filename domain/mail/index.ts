/**
 * The mail room (docs/architecture.md "Rooms"): the send policy of a user, the approval workflow of
 * a held send (hold, ask, decide, expire, repeats, audit: gate.ts), the preview the card shows
 * (preview.ts) and the rows of the audit trail (store.ts). The egress gateway (daemon/host/egress.ts)
 * calls the gate; the approval route (web/approval-routes.ts) decides through it.
 */
export { MailGate } from './gate.js';
export { mailPreview, PreviewIncomplete, type PreviewAttachment } from './preview.js';
export { mailPolicyFor, recipientFields, turnAudit } from './store.js';
export { serverMailPolicy, updateServerMailPolicy } from './server-policy.js';
