/**
 * Images for a model that takes image input (docs/chat.md "Images"): the PNG and JPEG uploads a
 * user message names on its "Attached:" line (the chat page adds it; uploads live in
 * /workspace/uploads) are read from the workspace and go with that message as image parts of the
 * request, in the provider's own shape (agent/models/openai.ts, anthropic.ts). The transcript keeps
 * only the message's text: the files stay in the workspace. Within a turn (one request per model
 * step) an image is read and encoded once: the turn's ImageCache keeps its part while the file is
 * the same (device, inode, size and modification time); a changed file is read again.
 *
 * Bounds, written down: an image of at most IMAGE_MAX_BYTES (its base64 stays within the 5 MB a
 * provider takes per image), at most IMAGES_PER_REQUEST per request, the newest messages' first.
 * One that is left out (too large, over the count, not what its name says, gone) is named in a
 * note added to its message's text, so the model knows it did not see it.
 */
import { constants, promises as fs } from 'node:fs';
import { join } from 'node:path';
import { kindOfName, sniff } from '../core/tables/cells.js';
import type { ImagePart, Message, MessageImages } from './types.js';

/** Parts already read in this turn, by upload name, with the stamp of the file they came from. */
export type ImageCache = Map<string, { stamp: string; part: ImagePart }>;

/** Largest image sent: 3.75 MiB, whose base64 is 5 MiB. */
export const IMAGE_MAX_BYTES = (5 * 1024 * 1024 * 3) / 4;
/** Most images in one request; the newest messages' go first. */
export const IMAGES_PER_REQUEST = 8;

const ATTACHED_LINE = /(?:^|\n\n)Attached: ((?:uploads\/[A-Za-z0-9._-]+(?:, )?)+)$/;
const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** The image uploads a message names (uploads/<name>, PNG or JPEG by name), in order. */
export function imageNames(content: string): string[] {
  const m = ATTACHED_LINE.exec(content);
  if (!m) return [];
  return m[1]!
    .split(', ')
    .map((p) => p.replace(/^uploads\//, ''))
    .filter((n) => NAME_RE.test(n) && (kindOfName(n) === 'png' || kindOfName(n) === 'jpeg'));
}

/**
 * An upload as an image part, no link followed, or why it cannot be one. The cache gives back the
 * part of a file already read this turn, while it is the same file.
 */
async function readImage(dir: string, name: string, cache: ImageCache | undefined): Promise<ImagePart | string> {
  const kind = kindOfName(name) === 'png' ? 'png' : 'jpeg';
  let fh: fs.FileHandle;
  try {
    fh = await fs.open(join(dir, name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ELOOP'
      ? 'it is a link, not a file'
      : 'it is no longer in the workspace';
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) return 'it is not a file';
    if (st.size > IMAGE_MAX_BYTES) return `it is larger than ${(IMAGE_MAX_BYTES / (1024 * 1024)).toFixed(2)} MB`;
    const stamp = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;
    const known = cache?.get(name);
    if (known?.stamp === stamp) return known.part;
    const data = await fh.readFile();
    if (!sniff(kind, data)) return `it is not a ${kind.toUpperCase()} file`;
    const part: ImagePart = {
      name: `uploads/${name}`,
      mediaType: kind === 'png' ? 'image/png' : 'image/jpeg',
      data: data.toString('base64'),
    };
    cache?.set(name, { stamp, part });
    return part;
  } finally {
    await fh.close();
  }
}

/**
 * The images of the user messages in `messages`, by message, read from `uploadsDir`: the newest
 * messages first until IMAGES_PER_REQUEST. Messages without images are absent from the map.
 */
export async function loadImages(
  messages: readonly Message[],
  uploadsDir: string,
  max = IMAGES_PER_REQUEST,
  cache?: ImageCache,
): Promise<Map<Message, MessageImages>> {
  const out = new Map<Message, MessageImages>();
  let left = max;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== 'user') continue;
    const names = imageNames(m.content);
    if (!names.length) continue;
    const got: MessageImages = { parts: [], notes: [] };
    for (const name of names) {
      const shown = `uploads/${name}`;
      if (left <= 0) {
        got.notes.push(
          `[The image ${shown} was not sent to you: at most ${max} images go with one request. Ask the user to attach it again if you need to see it.]`,
        );
        continue;
      }
      const part = await readImage(uploadsDir, name, cache);
      if (typeof part === 'string') got.notes.push(`[The image ${shown} was not sent to you: ${part}.]`);
      else {
        got.parts.push(part);
        left--;
      }
    }
    out.set(m, got);
  }
  return out;
}

/** A user message's text with the notes on images left out. */
export function withNotes(content: string, images: MessageImages | undefined): string {
  return images?.notes.length ? `${content}\n\n${images.notes.join('\n')}` : content;
}
