/**
 * A chat's export (GET /api/chat/sessions/:id/export, docs/chat.md "Export"): the branch shown,
 * as Markdown for people and as JSON for programs (the page's turns, the model's transcript and
 * the charts the turns refer to). Pure: the route reads the store and the files.
 */
import type { StoredTurn } from '../../core/chat-history.js';

/** Attachment names as the attachments route serves them: a chart (a UUID and .png) or a kept out/ file of run_python (a UUID and its type). */
export const ATTACHMENT_NAME_RE =
  /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.(?:png|svg|csv|xlsx|json|txt)/g;

/** The chart files a branch's tool calls name (inputs and outputs), each once, in order. */
export function attachmentNames(turns: readonly StoredTurn[]): string[] {
  const names = new Set<string>();
  for (const t of turns) {
    for (const c of t.tool_calls) {
      for (const m of JSON.stringify([c.input, c.output ?? null]).matchAll(ATTACHMENT_NAME_RE)) names.add(m[0]);
    }
  }
  return [...names];
}

const ENTITY: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;' };

/**
 * Text a user or the model wrote, as literal Markdown (docs/chat.md "Export"): `&`, `<` and `>`
 * become entities (no raw HTML survives), Markdown's inline marks are backslash-escaped, `:`, `@`
 * and `www.` too (GFM would make links of URLs and addresses), and what would start a heading,
 * list, quote or rule at a line's start is escaped too; so a renderer shows exactly the
 * characters typed.
 */
export function markdownText(s: string): string {
  return s
    .replace(/\r\n?/g, '\n')
    .replace(/[&<>]/g, (c) => ENTITY[c])
    .replace(/[\\`*_[\]()!|~#:@]/g, '\\$&')
    .replace(/\b(www)\./gi, '$1\\.')
    .replace(/^([ \t]*)(\d+)([.)])/gm, '$1$2\\$3')
    .replace(/^([ \t]*)([-+=])/gm, '$1\\$2');
}

/** One line of literal text (a title): line breaks become spaces. */
function markdownLine(s: string): string {
  return markdownText(s.replace(/[\r\n\t]+/g, ' ').trim());
}

/**
 * The model's answer keeps its Markdown (it writes Markdown on purpose; the chat page renders it),
 * but raw HTML does not survive: outside fenced blocks and code spans, `<` before a tag, comment
 * or declaration becomes `&lt;`, and `&` before an entity name `&amp;` (the page shows no raw
 * HTML either).
 */
export function markdownAnswer(s: string): string {
  let fence: string | null = null;
  return s
    .replace(/\r\n?/g, '\n')
    .split('\n')
    .map((line) => {
      const open = /^ {0,3}(`{3,}|~{3,})/.exec(line);
      if (fence) {
        if (open && open[1][0] === fence[0] && open[1].length >= fence.length && line.trim() === open[1]) fence = null;
        return line;
      }
      if (open) {
        fence = open[1];
        return line;
      }
      // Code spans (a backtick run up to the same run) stay as written.
      return line
        .split(/(`+[^`]*?`+)/)
        .map((piece, i) =>
          i % 2 === 1 ? piece : piece.replace(/<(?=[A-Za-z/!?])/g, '&lt;').replace(/&(?=#?[A-Za-z0-9]+;)/g, '&amp;'),
        )
        .join('');
    })
    .join('\n');
}

/** A fenced block that no line of `body` can close. */
function fence(body: string, lang = ''): string {
  const longest = Math.max(2, ...[...body.matchAll(/`+/g)].map((m) => m[0].length));
  const f = '`'.repeat(longest + 1);
  return `${f}${lang}\n${body}\n${f}`;
}

function toolLine(c: StoredTurn['tool_calls'][number]): string {
  const ms = c.duration_ms !== null ? ` in ${c.duration_ms} ms` : '';
  const how =
    c.status === 'ok'
      ? `done${ms}`
      : c.status === 'running'
        ? 'did not finish'
        : `${c.status}${c.error ? `: ${c.error}` : ''}`;
  return `**Tool \`${c.tool.replace(/`/g, '')}\`**: ${markdownText(how)}`;
}

function turnMarkdown(t: StoredTurn, i: number): string {
  const parts: string[] = [
    `## ${i + 1}. You (${markdownLine(t.started_at)})`,
    '',
    markdownText(t.prompt),
    '',
    '## Assistant',
    '',
  ];
  for (const c of t.tool_calls) {
    parts.push(toolLine(c), '', fence(JSON.stringify(c.input, null, 2), 'json'), '');
    const charts = JSON.stringify(c.output ?? null).match(ATTACHMENT_NAME_RE) ?? [];
    for (const name of new Set(charts))
      parts.push(/\.(png|svg)$/.test(name) ? `![chart](attachments/${name})` : `[${name}](attachments/${name})`, '');
  }
  if (t.text) parts.push(markdownAnswer(t.text), '');
  if (t.stop_reason === 'cancelled') parts.push('_Stopped by the user._', '');
  if (t.error)
    parts.push(
      `_The answer ended with an error: ${markdownText(t.error.message)} (${markdownText(t.error.code)})._`,
      '',
    );
  if (t.usage) parts.push(`_Tokens: ${t.usage.input_tokens} in, ${t.usage.output_tokens} out._`, '');
  return parts.join('\n');
}

/** The branch shown as Markdown: the title, then each turn's prompt, tool calls, answer and how it ended. */
export function chatMarkdown(
  session: { title: string; created_at: string },
  turns: readonly StoredTurn[],
  exportedAt: string,
): string {
  const head = [
    `# ${markdownLine(session.title) || 'Chat'}`,
    '',
    `_Exported from Airlock on ${exportedAt}; started ${session.created_at}; ${turns.length} turn${turns.length === 1 ? '' : 's'} of the branch shown. Charts are named as files under attachments/ (the JSON export carries them)._`,
    '',
  ];
  return (
    [...head, ...turns.map(turnMarkdown)]
      .join('\n')
      .replace(/\n{3,}/g, '\n\n')
      .trimEnd() + '\n'
  );
}
