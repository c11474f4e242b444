/**
 * Whether a chat model takes image input (docs/chat.md "Images"): `chat_models.images`, 1 when
 * the agent may send the images a message attaches (PNG, JPEG uploads) as image parts of the
 * request. Off for every entry until an admin (or AIRLOCK_MODEL_IMAGES for the default) turns it on.
 */
const steps = `
ALTER TABLE chat_models ADD COLUMN images INTEGER NOT NULL DEFAULT 0;
`;

export const sqlite = steps;
export const postgres = steps;
