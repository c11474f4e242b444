import type { Message, ModelAdapter, ModelReply, ModelRequest, ToolCall, ToolDef } from '../types.js';

/**
 * The deterministic offline demo model: no network, no key. It reads the latest prompt and
 * the tool results since, and plays one of a few plans:
 *  - "chart the sample spreadsheet … and email it to x@y.z": search_spreadsheets → fetch_sheet
 *    → rasterize_chart → send_email (with the returned file name), then a short text;
 *  - "chart my file sales.csv [and email it to x@y.z]" (a file uploaded into the chat):
 *    read_file_table → rasterize_chart → send_email, or render_chart without a recipient;
 *  - "chart 3 5 8 and email the chart to a@b.c": rasterize_chart → send_email, then text;
 *  - "chart 3 5 8": render_chart, then text;
 *  - "what do you remember?": fetch_memory, then how many entries it read;
 *  - anything else: a helpful text that says it is the demo model.
 * A plan step whose tool is not loaded (agent policy) ends the turn with a text saying so.
 */
export class DemoModel implements ModelAdapter {
  readonly name = 'demo';
  constructor(private readonly opts: { chunkDelayMs?: number } = {}) {}

  async complete(req: ModelRequest, onText: (t: string) => void): Promise<ModelReply> {
    const reply = plan(req.messages, req.tools);
    for (const piece of reply.text.match(/\S+\s*/g) ?? []) {
      if (req.signal.aborted) throw req.signal.reason;
      if (this.opts.chunkDelayMs) await new Promise((r) => setTimeout(r, this.opts.chunkDelayMs));
      onText(piece);
    }
    return reply;
  }
}

const EMAIL_RE = /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+/;
/** A file the user uploaded, named in the prompt (\"chart my file sales.csv …\"). */
const FILE_RE = /(?:^|[\s"'(/])([A-Za-z0-9][A-Za-z0-9._-]{0,99}\.(?:csv|xlsx))\b/i;
const PNG_RE = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.png/i;
/** What a person reads when a refused send ends the plan (by the code the tool's error carries). */
const REFUSED_IN_WORDS: Readonly<Record<string, string>> = {
  ERR_MAIL_DENIED:
    'You chose not to send the e-mail, so it was not sent. Tell me what to change if you want to try again.',
  ERR_MAIL_APPROVAL_TIMEOUT:
    'The e-mail was not sent: nobody approved it in time. Ask me again when you can approve it.',
  ERR_MAIL_APPROVAL_UNAVAILABLE:
    'The e-mail was not sent: it needed your approval, but the chat could not ask for it. Please try again.',
  ERR_MAIL_BLOCKED:
    "The e-mail was not sent: your organisation's mail policy does not allow it (a recipient it blocks, or too many recipients).",
  ERR_MAIL_RATE_LIMITED:
    'The e-mail was not sent: you have sent as many messages as your organisation allows for now. Try again later.',
};

/**
 * A tool's failure as a sentence: a refused send says why in plain words; any other failure says
 * which step did not work. The codes an error carries ("(ERR_MAIL_DENIED)") are for the tool
 * row's details, never the answer.
 */
function failureInWords(tool: string, content: string): string {
  const code = /\bERR_[A-Z0-9_]+\b/.exec(content)?.[0];
  if (code && REFUSED_IN_WORDS[code]) return REFUSED_IN_WORDS[code];
  const why = content
    .replace(/\s*\(?\bERR_[A-Z0-9_]+\b\)?:?/g, '')
    .replace(/^Error:\s*/, '')
    .trim()
    .slice(0, 300);
  return `I could not finish: the ${tool} step did not work${why ? ` (${why})` : ''}.`;
}

/** A plan step: the tool call, or a text when the tool is not loaded. */
type Call = (name: string, input: Record<string, unknown>) => ModelReply;

function plan(messages: readonly Message[], tools: readonly ToolDef[]): ModelReply {
  let u = messages.length - 1;
  while (u >= 0 && messages[u].role !== 'user') u--;
  const prompt = u >= 0 ? (messages[u] as { content: string }).content : '';
  const results = messages.slice(u + 1).filter((m): m is Extract<Message, { role: 'tool' }> => m.role === 'tool');
  const step = results.length;
  const lower = prompt.toLowerCase();
  const to = prompt.match(EMAIL_RE)?.[0];
  const wantsChart = /\bchart|\bplot|\bgraph/.test(lower);
  const wantsMail = /\be-?mail|\bsend\b|\bmail\b/.test(lower) && !!to;
  const fromSheet = /spreadsheet|\bsheet\b/.test(lower);
  const have = new Set(tools.map((t) => t.name));
  const schemaOf = (name: string) => tools.find((t) => t.name === name)?.inputSchema;
  const last = results[results.length - 1];

  if (last?.isError) return text(failureInWords(last.name, last.content));

  const call = (name: string, input: Record<string, unknown>): ModelReply => {
    if (!have.has(name)) return text(`I would use the ${name} tool for this, but it is not available in this session.`);
    return { text: '', toolCalls: [{ id: `demo_${step + 1}_${name}`, name, input: pick(schemaOf(name), input) }] };
  };

  const file = prompt.match(FILE_RE)?.[1];
  if (wantsChart && file) return chartFile(call, results, file, wantsMail ? to : undefined);
  if (wantsChart && fromSheet && wantsMail) return chartSheetAndMail(call, results, prompt, to!);
  if (wantsChart && wantsMail) return chartNumbersAndMail(call, results, prompt, to!);
  if (wantsChart) {
    const values = numbersIn(prompt);
    if (!values.length) return text('Tell me which numbers to chart, for example "chart 3 5 8". (demo model)');
    if (step === 0) return call('render_chart', numberedChart(values));
    return text(`Here is the chart of ${values.join(', ')}. (demo model)`);
  }
  if (/\bremember\b|\bmemor(?:y|ies)\b/.test(lower)) {
    if (step === 0) return call('fetch_memory', {});
    const n = (results[0].content.match(/"id"\s*:/g) ?? []).length;
    return text(`I read ${n} saved memory entr${n === 1 ? 'y' : 'ies'}. (demo model)`);
  }
  // The count shows the conversation is kept in the warm process (operators and tests rely on it).
  const n = messages.filter((m) => m.role === 'user').length;
  return text(
    `I am the offline demo model (message ${n} of this conversation): I understand a few request shapes only. Try "chart 3 5 8", ` +
      '"chart 3 5 8 and email the chart to someone@example.com" or ' +
      '"chart the sample spreadsheet and email it to someone@example.com". Configure a real model provider for anything else.',
  );
}

/** "chart the sample spreadsheet … and email it to x@y.z": search_spreadsheets → fetch_sheet → rasterize_chart → send_email. */
function chartSheetAndMail(
  call: Call,
  results: readonly { content: string }[],
  prompt: string,
  to: string,
): ModelReply {
  const step = results.length;
  const lower = prompt.toLowerCase();
  const query = /sample/.test(lower)
    ? 'sample'
    : (prompt.match(/spreadsheet\s+"?([^"]+?)"?(\s+and|\s*$)/i)?.[1] ?? 'sample');
  if (step === 0) return call('search_spreadsheets', { query });
  if (step === 1) {
    const id = findId(results[0].content);
    if (!id) return text('I searched your spreadsheets but found none matching that.');
    // A range without a tab name reads the first tab (Sheets v4 semantics).
    return call('fetch_sheet', { spreadsheet_id: id, range: 'A1:Z200' });
  }
  // The chart and the mail are named after the spreadsheet the search found.
  const sheetName = findName(results[0]?.content ?? '') ?? 'Spreadsheet';
  if (step === 2) {
    const { labels, values, series } = seriesFromSheet(results[1].content);
    if (!values.length) return text('The spreadsheet has no numbers I could chart.');
    return call('rasterize_chart', {
      ...chartArgs(sheetName, labels, values),
      datasets: [{ label: series ?? sheetName, data: values }],
    });
  }
  if (step === 3) return mail(call, results[2].content, to, sheetName);
  return text(`Done: I charted "${sheetName}" and e-mailed the chart to ${to}. (demo model)`);
}

/** A chart of bare numbers: labelled #1, #2, … */
function numberedChart(values: number[]): ReturnType<typeof chartArgs> {
  return chartArgs(
    'Chart',
    values.map((_, i) => `#${i + 1}`),
    values,
  );
}

/** "chart 3 5 8 and email the chart to a@b.c": rasterize_chart → send_email. */
function chartNumbersAndMail(
  call: Call,
  results: readonly { content: string }[],
  prompt: string,
  to: string,
): ModelReply {
  const step = results.length;
  const values = numbersIn(prompt.replace(EMAIL_RE, ''));
  if (!values.length)
    return text('Tell me which numbers to chart, for example "chart 3 5 8 and email the chart to a@b.c". (demo model)');
  if (step === 0) return call('rasterize_chart', numberedChart(values));
  if (step === 1) return mail(call, results[0].content, to);
  return text(`Done: I drew the chart of ${values.join(', ')} and e-mailed it to ${to}. (demo model)`);
}

/** Chart an uploaded file's table: read_file_table, then a PNG to mail (rasterize_chart) or a chart shown in the chat (render_chart). */
function chartFile(
  call: (n: string, i: Record<string, unknown>) => ModelReply,
  results: readonly { content: string }[],
  file: string,
  to: string | undefined,
): ModelReply {
  const step = results.length;
  if (step === 0) return call('read_file_table', { name: file });
  if (step === 1) {
    const { labels, values, series } = seriesFromSheet(results[0]!.content);
    if (!values.length) return text(`The file ${file} has no numbers I could chart.`);
    return call(to ? 'rasterize_chart' : 'render_chart', {
      ...chartArgs(file, labels, values),
      datasets: [{ label: series ?? file, data: values }],
    });
  }
  if (to && step === 2) return mail(call, results[1]!.content, to, file);
  return text(
    to
      ? `Done: I charted ${file} and e-mailed the chart to ${to}. (demo model)`
      : `Here is the chart of ${file}. (demo model)`,
  );
}

function mail(
  call: (n: string, i: Record<string, unknown>) => ModelReply,
  rasterResult: string,
  to: string,
  about?: string,
): ModelReply {
  const file = rasterResult.match(PNG_RE)?.[0];
  if (!file) return { text: 'The chart tool did not return a file name, so I cannot attach it.', toolCalls: [] };
  return call('send_email', {
    to: [to],
    subject: about ? `Chart: ${about}` : 'Your chart',
    text: 'Here is the chart you asked for (sent by the Airlock demo model).',
    html: `<p>Here is the chart you asked for.</p><p><img src="cid:${file}" alt="chart"></p><p>Sent by the Airlock demo model.</p>`,
    attachments: [file],
  });
}

function text(t: string): ModelReply {
  return { text: t, toolCalls: [] as ToolCall[] };
}

function numbersIn(s: string): number[] {
  return (s.match(/-?\d+(?:\.\d+)?/g) ?? [])
    .map(Number)
    .filter((n) => Number.isFinite(n))
    .slice(0, 50);
}

function chartArgs(title: string, labels: string[], values: number[]): Record<string, unknown> {
  return { type: 'bar', title, labels, datasets: [{ label: title, data: values }] };
}

/**
 * Use the argument names the tool's schema declares where ours differ (the demo knows a few
 * synonyms), so the demo keeps working when a tool names a field differently.
 */
const SYNONYMS: Record<string, string[]> = {
  attachment: ['attachment', 'attachment_filename', 'attachment_name', 'filename', 'attachments'],
  spreadsheet_id: ['spreadsheet_id', 'spreadsheetId', 'id', 'file_id'],
  type: ['type', 'chart_type', 'kind'],
  body: ['body', 'text', 'message'],
  to: ['to', 'recipient', 'recipients'],
  query: ['query', 'q', 'name'],
};

function pick(schema: Record<string, unknown> | undefined, input: Record<string, unknown>): Record<string, unknown> {
  const props = (schema?.properties ?? {}) as Record<string, { type?: string }>;
  const names = Object.keys(props);
  if (!names.length) return input;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(input)) {
    const target = (SYNONYMS[k] ?? [k]).find((n) => names.includes(n)) ?? k;
    out[target] = props[target]?.type === 'array' && !Array.isArray(v) ? [v] : v;
  }
  return out;
}

function parsed(content: string): unknown {
  try {
    return JSON.parse(content);
  } catch {
    return undefined;
  }
}

function findId(content: string): string | undefined {
  const j = parsed(content);
  const walk = (v: unknown): string | undefined => {
    if (Array.isArray(v)) {
      for (const x of v) {
        const r = walk(x);
        if (r) return r;
      }
    } else if (v && typeof v === 'object') {
      const o = v as Record<string, unknown>;
      for (const k of ['spreadsheet_id', 'spreadsheetId', 'id']) if (typeof o[k] === 'string') return o[k] as string;
      for (const x of Object.values(o)) {
        const r = walk(x);
        if (r) return r;
      }
    }
    return undefined;
  };
  return walk(j) ?? content.match(/"?(?:spreadsheet_?[iI]d|id)"?\s*[:=]\s*"?([A-Za-z0-9_-]{3,})/)?.[1];
}

/** The `name` of the first file a search returned (Drive's files[].name), if any. */
function findName(content: string): string | undefined {
  const j = parsed(content) as { files?: unknown } | null;
  const files: unknown[] | undefined = Array.isArray(j?.files) ? j.files : Array.isArray(j) ? j : undefined;
  const name = (files?.[0] as { name?: unknown } | undefined)?.name;
  return typeof name === 'string' && name.trim() ? name.trim().slice(0, 100) : undefined;
}

/**
 * First text column as labels, first numeric column as values; a leading row without numbers is
 * the header, and names the series (e.g. "Sales").
 */
function seriesFromSheet(content: string): { labels: string[]; values: number[]; series?: string } {
  const j = parsed(content) as { values?: unknown; rows?: unknown } | null;
  const rows: unknown[][] | undefined = Array.isArray(j?.values)
    ? j.values
    : Array.isArray(j)
      ? j
      : Array.isArray(j?.rows)
        ? j.rows
        : undefined;
  if (!rows) return { labels: [], values: numbersIn(content) };
  const labels: string[] = [];
  const values: number[] = [];
  let column = -1;
  for (const row of rows) {
    if (!Array.isArray(row)) continue;
    const i = row.findIndex((c, k) => k > 0 && c !== '' && Number.isFinite(Number(c)));
    if (i < 0) continue;
    if (column < 0) column = i;
    labels.push(String(row[0]));
    values.push(Number(row[i]));
  }
  const first = rows.find((r) => Array.isArray(r));
  const header = first && !first.slice(1).some((c) => c !== '' && Number.isFinite(Number(c))) ? first : undefined;
  const series = column > 0 && header ? String(header[column] ?? '').trim() : '';
  return { labels, values, ...(series ? { series } : {}) };
}
