/**
 * The request rules the real model APIs enforce on a conversation, checked by the scripted model
 * servers so a malformed request fails in tests as it would in production (400
 * invalid_request_error with the API's own wording). Returns the first problem, or undefined.
 */

type Obj = Record<string, any>;
const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);

/** The image types both APIs take, and the first bytes each starts with. */
const IMAGE_MAGIC: Record<string, (b: Buffer) => boolean> = {
  'image/png': (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
  'image/jpeg': (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff,
  'image/gif': (b) => b.subarray(0, 4).toString('latin1') === 'GIF8',
  'image/webp': (b) =>
    b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP',
};

/** Base64 image data as the APIs check it: valid base64 of an image of the type it names. */
function imageProblem(mediaType: unknown, data: unknown): string | undefined {
  if (typeof mediaType !== 'string' || !IMAGE_MAGIC[mediaType])
    return "Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'";
  if (typeof data !== 'string' || !data || !/^[A-Za-z0-9+/]+={0,2}$/.test(data) || data.length % 4)
    return 'Invalid base64 data';
  if (!IMAGE_MAGIC[mediaType](Buffer.from(data, 'base64')))
    return `Image does not match the provided media type ${mediaType}`;
  return undefined;
}

/** An OpenAI user message's content parts: text, or image_url with an http(s) or base64 data URL. */
function openAiPartsProblem(i: number, parts: unknown[]): string | undefined {
  if (!parts.length) return `messages[${i}].content: array must not be empty`;
  for (const [j, p] of parts.entries()) {
    if (!isObj(p)) return `messages[${i}].content[${j}]: expected an object`;
    if (p.type === 'text') {
      if (typeof p.text !== 'string') return `messages[${i}].content[${j}].text must be a string`;
    } else if (p.type === 'image_url') {
      const url = p.image_url?.url;
      if (typeof url !== 'string') return `messages[${i}].content[${j}].image_url.url must be a string`;
      const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
      if (data) {
        const why = imageProblem(data[1], data[2]);
        if (why) return `Invalid image in messages[${i}].content[${j}]: ${why}`;
      } else if (!/^https?:\/\//.test(url))
        return `Invalid image URL in messages[${i}].content[${j}]: expected a URL or a base64 data URL`;
    } else return `messages[${i}].content[${j}].type: invalid value`;
  }
  return undefined;
}

/**
 * OpenAI Chat Completions: known roles; an assistant message with `tool_calls` is followed by one
 * `tool` message per call id before anything else; a `tool` message answers a call of the
 * assistant message before it; an assistant message has content or tool calls; a user message's
 * content parts are text or an image_url whose data URL is base64 of the image type it names.
 */
export function openAiWireProblem(body: Obj): string | undefined {
  const msgs = body.messages;
  if (!Array.isArray(msgs) || !msgs.length) return "'messages' must be a non-empty array";
  if (body.stream_options !== undefined && body.stream !== true)
    return "'stream_options' is only allowed when 'stream' is true";
  let open: Set<string> | undefined;
  for (const [i, m] of msgs.entries()) {
    if (!isObj(m) || !['system', 'developer', 'user', 'assistant', 'tool'].includes(m.role))
      return `messages[${i}]: unknown role`;
    if (m.role === 'tool') {
      if (!open || !open.has(m.tool_call_id))
        return `messages[${i}]: messages with role 'tool' must be a response to a preceding message with 'tool_calls'`;
      open.delete(m.tool_call_id);
      if (typeof m.content !== 'string') return `messages[${i}].content must be a string`;
      continue;
    }
    if (open && open.size)
      return `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...open].join(', ')}`;
    open = undefined;
    if (m.role === 'assistant') {
      const calls = m.tool_calls ?? [];
      if (!Array.isArray(calls)) return `messages[${i}].tool_calls must be an array`;
      if ((m.content === null || m.content === undefined || m.content === '') && !calls.length)
        return `messages[${i}]: an assistant message needs content or tool_calls`;
      const ids = calls.map((c: Obj) => c?.id);
      if (ids.some((id: unknown) => typeof id !== 'string' || !id) || new Set(ids).size !== ids.length)
        return `messages[${i}].tool_calls: ids must be unique strings`;
      for (const c of calls) {
        if (c.type !== 'function' || typeof c.function?.name !== 'string' || typeof c.function?.arguments !== 'string')
          return `messages[${i}].tool_calls: malformed call`;
      }
      if (calls.length) open = new Set(ids);
    } else if (typeof m.content !== 'string' && !Array.isArray(m.content))
      return `messages[${i}].content must be a string`;
    else if (m.role === 'user' && Array.isArray(m.content)) {
      const why = openAiPartsProblem(i, m.content);
      if (why) return why;
    }
  }
  if (open && open.size)
    return `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...open].join(', ')}`;
  return undefined;
}

const ANTHROPIC_ID = /^[a-zA-Z0-9_-]+$/;

/**
 * Anthropic Messages: `max_tokens`; the first message is the user's and roles alternate; content
 * is never empty and text blocks are non-empty; each tool_use id of an assistant message has its
 * tool_result in the very next user message, which lists its tool_result blocks first; a
 * tool_result answers a tool_use of the message before; an image block (user messages only) is
 * base64 of the media type it names; ids match ^[a-zA-Z0-9_-]+$; a final
 * assistant message does not end in whitespace.
 */
export function anthropicWireProblem(body: Obj): string | undefined {
  const msgs = body.messages;
  if (typeof body.max_tokens !== 'number') return 'max_tokens: Field required';
  if (!Array.isArray(msgs) || !msgs.length) return 'messages: at least one message is required';
  let prevUses = new Set<string>();
  for (const [i, m] of msgs.entries()) {
    if (!isObj(m) || (m.role !== 'user' && m.role !== 'assistant'))
      return `messages.${i}.role: Input should be 'user' or 'assistant'`;
    if (i === 0 && m.role !== 'user') return 'messages: first message must use the "user" role';
    if (i > 0 && msgs[i - 1].role === m.role)
      return `messages: roles must alternate between "user" and "assistant" (messages.${i})`;
    const blocks: Obj[] =
      typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : Array.isArray(m.content) ? m.content : [];
    if (!blocks.length) return `messages.${i}: all messages must have non-empty content`;
    const uses = new Set<string>();
    let seenOther = false;
    const answered = new Set<string>();
    for (const b of blocks) {
      if (b.type === 'text') {
        if (typeof b.text !== 'string' || !b.text) return `messages.${i}: text content blocks must be non-empty`;
        seenOther = true;
      } else if (b.type === 'tool_use') {
        if (m.role !== 'assistant') return `messages.${i}: tool_use blocks are only allowed in assistant messages`;
        if (typeof b.id !== 'string' || !ANTHROPIC_ID.test(b.id))
          return `messages.${i}: tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'`;
        if (uses.has(b.id)) return `messages.${i}: tool_use ids must be unique`;
        uses.add(b.id);
      } else if (b.type === 'image') {
        if (m.role !== 'user') return `messages.${i}: image blocks are only allowed in user messages`;
        if (b.source?.type !== 'base64') return `messages.${i}: image.source.type: only base64 is checked here`;
        const why = imageProblem(b.source.media_type, b.source.data);
        if (why) return `messages.${i}: image.source.base64: ${why}`;
        seenOther = true;
      } else if (b.type === 'tool_result') {
        if (m.role !== 'user') return `messages.${i}: tool_result blocks are only allowed in user messages`;
        if (seenOther) return `messages.${i}: tool_result blocks must come first in the content`;
        if (!prevUses.has(b.tool_use_id))
          return `messages.${i}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${b.tool_use_id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
        answered.add(b.tool_use_id);
      } else return `messages.${i}: unknown content block type`;
    }
    if (m.role === 'user') {
      const missing = [...prevUses].filter((id) => !answered.has(id));
      if (missing.length)
        return `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
    }
    prevUses = m.role === 'assistant' ? uses : new Set();
  }
  const last = msgs[msgs.length - 1];
  if (prevUses.size) return '`tool_use` ids were found without `tool_result` blocks immediately after';
  if (last.role === 'assistant') {
    const blocks: Obj[] = typeof last.content === 'string' ? [{ type: 'text', text: last.content }] : last.content;
    const tail = blocks[blocks.length - 1];
    if (tail?.type === 'text' && /\s$/.test(tail.text))
      return 'final assistant content cannot end with trailing whitespace';
  }
  return undefined;
}
