/**
 * run_python's card body (docs/chat.md#run_python-in-the-chat): the code the model ran, in a
 * collapsible monospace block, and on failure the traceback, in place of the generic JSON dump.
 * Preact escapes every string, so code or a traceback holding markup is shown as text. The boxes
 * scroll, so each takes focus (keyboard users can scroll them).
 */

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
