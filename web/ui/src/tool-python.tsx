/**
 * run_python's card body (docs/chat.md#run_python-in-the-chat): the code the model ran, in a
 * collapsible monospace block, and on failure the traceback, in place of the generic JSON dump.
 * Preact escapes every string, so code or a traceback holding markup is shown as text. The boxes
 * scroll, so each takes focus (keyboard users can scroll them).
 */
import { useState } from 'preact/hooks';
import type { FilePreview as Preview } from '../../chat-api.js';
import { PreviewTable, PreviewText } from './chat-files.js';

/** A tool name is run_python (plain, or prefixed by an MCP server name). */
export function isRunPython(tool: string): boolean {
  return tool === 'run_python' || tool.endsWith('__run_python');
}

/** The code of a call's input (empty when the input is not `{code: string}`). */
export function pythonCode(input: unknown): string {
  const c = input && typeof input === 'object' ? (input as { code?: unknown }).code : undefined;
  return typeof c === 'string' ? c : '';
}

/**
 * The traceback (with any stdout printed before it) of a failed call: the tool's message without
 * its `(ERR_…)` code (the sentence above the card names it). Other failures (limits, Stop) give their one-line message.
 */
export function pythonFailure(error: string): string {
  return error.replace(/\s*\(ERR_[A-Z0-9_]+\)\s*$/, '').replace(/^ERR_[A-Z0-9_]+:\s*/, '');
}

/** A file the call wrote under out/, as the chat keeps it (tools/attachments.ts keepOutFiles). */
export interface PythonFile {
  name: string;
  path: string;
  size: number;
}

const KEPT_NAME = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.(png|svg|csv|xlsx|json|txt)$/;

/** The kept files of a call's output (anything else in the list is left out). */
export function pythonFiles(out: unknown): PythonFile[] {
  const list = out && typeof out === 'object' ? (out as { attachments?: unknown }).attachments : undefined;
  if (!Array.isArray(list)) return [];
  return list
    .filter(
      (f): f is PythonFile =>
        !!f &&
        typeof f === 'object' &&
        KEPT_NAME.test(String((f as PythonFile).name)) &&
        typeof (f as PythonFile).path === 'string',
    )
    .slice(0, 10);
}

const kib = (n: number) =>
  n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / (1024 * 1024)).toFixed(1)} MiB`;

/**
 * A kept file that is not an image: its preview (a CSV's or XLSX's first rows, the start of a JSON
 * or TXT file), fetched when the user opens it (GET …/attachments/:name/preview).
 */
function FilePreviewLazy({ file, url }: { file: PythonFile; url: string }) {
  const [state, setState] = useState<{ preview?: Preview; error?: string } | undefined>();
  const load = (open: boolean) => {
    if (!open || state) return;
    setState({});
    fetch(`${url}/preview`, { credentials: 'same-origin', headers: { accept: 'application/json' } })
      .then(async (r) => {
        const body = (await r.json().catch(() => ({}))) as Preview & { error?: { code: string; message: string } };
        setState(
          r.ok
            ? { preview: body }
            : { error: body.error ? `${body.error.message} (${body.error.code})` : `HTTP ${r.status}` },
        );
      })
      .catch((e: unknown) => setState({ error: String(e) }));
  };
  return (
    <details class="py-preview" onToggle={(e) => load((e.currentTarget as HTMLDetailsElement).open)}>
      <summary>Preview {file.path}</summary>
      {state?.preview?.table ? (
        <PreviewTable table={state.preview.table} name={file.path} />
      ) : state?.preview?.text ? (
        <PreviewText text={state.preview.text} name={file.path} />
      ) : state?.error ? (
        <p class="error small-text" role="alert">
          No preview: {state.error}
        </p>
      ) : (
        <p class="muted small-text">Loading…</p>
      )}
    </details>
  );
}

/**
 * The files a call wrote under out/: a PNG or SVG shown (full size on click, in a tab of its own,
 * where an SVG is served sandboxed), every other file with a preview on request, every one with a
 * Download named after its path.
 */
export function PythonFiles({ files, url }: { files: PythonFile[]; url(name: string): string }) {
  if (!files.length) return null;
  return (
    <ul class="py-files" aria-label="Files the code wrote">
      {files.map((f) => {
        const base = f.path.replace(/^out\//, '');
        const image = /\.(png|svg)$/.test(f.name);
        return (
          <li key={f.name} data-file={f.path}>
            {image && (
              <a href={url(f.name)} target="_blank" rel="noopener">
                <img class="attachment" src={url(f.name)} alt={`${f.path}, written by the code`} />
              </a>
            )}
            <a class="py-download" href={url(f.name)} download={base}>
              Download {f.path}
            </a>{' '}
            <span class="muted">({kib(f.size)})</span>
            {!image && <FilePreviewLazy file={f} url={url(f.name)} />}
          </li>
        );
      })}
    </ul>
  );
}

/** The code, then the output or the traceback; `status` is the call's. */
export function PythonBody(props: { input: unknown; status: string; error?: string; stdout?: string }) {
  const code = pythonCode(props.input);
  const lines = code ? code.split('\n').length : 0;
  return (
    <div class="py">
      <details class="py-code" open={lines <= 12}>
        <summary>
          Code <span class="muted">({lines === 1 ? '1 line' : `${lines} lines`})</span>
        </summary>
        <pre class="code" tabIndex={0} aria-label="Python code">
          <code>{code}</code>
        </pre>
      </details>
      {props.status === 'failed' && props.error && (
        <>
          <div class="muted">Traceback</div>
          <pre class="py-traceback" tabIndex={0} aria-label="Traceback">
            {pythonFailure(props.error)}
          </pre>
        </>
      )}
      {props.status === 'ok' && props.stdout && (
        <>
          <div class="muted">Output</div>
          <pre class="py-stdout" tabIndex={0} aria-label="Output">
            {props.stdout}
          </pre>
        </>
      )}
    </div>
  );
}
