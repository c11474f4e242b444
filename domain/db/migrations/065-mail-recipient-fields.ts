/**
 * A held send keeps its recipients by header (docs/chat.md#approvals): `mail_holds.recipient_fields`,
 * JSON `{ "to": [...], "cc": [...], "bcc": [...] }`, so the approval card after a reload and the
 * admin's turn audit show To, Cc and Bcc apart, as the live card does. Rows held before this
 * migration keep null: they show their recipients as one list, as before.
 */
export const sqlite = `ALTER TABLE mail_holds ADD COLUMN recipient_fields TEXT;`;
export const postgres = `ALTER TABLE mail_holds ADD COLUMN recipient_fields TEXT;`;
