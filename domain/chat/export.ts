/**
 * A chat's export (GET /api/chat/sessions/:id/export, docs/chat.md "Export"): the branch shown,
 * as Markdown for people and as JSON for programs (the page's turns, the model's transcript and
 * the charts the turns refer to). Pure: the route reads the store and the files.
 */
import type { StoredTurn } from '../../core/chat-history.js';

/** Chart file names rasterize_chart makes (a UUID and .png), as the attachments route serves them. */
export const ATTACHMENT_NAME_RE = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.png/g;

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

/** A fenced block that no line of `body` can close. */
function fence(body: string, lang = ''): string {
  const longest = Math.max(2, ...[...body.matchAll(/`+/g)].map((m) => m[0].length));
  const f = '`'.repeat(longest + 1);
  return `${f}${lang}\n${body}\n${f}`;
}

function toolLine(c: StoredTurn['tool_calls'][number]): string {
  const ms = c.duration_ms !== null ? ` in ${c.duration_ms} ms` : '';
  const how = c.status === 'ok' ? `done${ms}` : c.status === 'running' ? 'did not finish' : `${c.status}${c.error ? `: ${c.error}` : ''}`;
  return `**Tool \`${c.tool}\`**: ${how}`;
}

function turnMarkdown(t: StoredTurn, i: number): string {
  const parts: string[] = [`## ${i + 1}. You (${t.started_at})`, '', t.prompt, '', '## Assistant', ''];
  for (const c of t.tool_calls) {
    parts.push(toolLine(c), '', fence(JSON.stringify(c.input, null, 2), 'json'), '');
    const charts = JSON.stringify(c.output ?? null).match(ATTACHMENT_NAME_RE) ?? [];
    for (const name of new Set(charts)) parts.push(`![chart](attachments/${name})`, '');
  }
  if (t.text) parts.push(t.text, '');
  if (t.stop_reason === 'cancelled') parts.push('_Stopped by the user._', '');
  if (t.error) parts.push(`_The answer ended with an error: ${t.error.message} (${t.error.code})._`, '');
  if (t.usage) parts.push(`_Tokens: ${t.usage.input_tokens} in, ${t.usage.output_tokens} out._`, '');
  return parts.join('\n');
}

/** The branch shown as Markdown: the title, then each turn's prompt, tool calls, answer and how it ended. */
export function chatMarkdown(session: { title: string; created_at: string }, turns: readonly StoredTurn[], exportedAt: string): string {
  const head = [
    `# ${session.title || 'Chat'}`,
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
