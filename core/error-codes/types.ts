/**
 * Where a code can reach someone:
 * - `http`: the web app's JSON error body `{"error":{"code","message"}}` with the status.
 * - `turn`: `done.error` of a chat turn (NDJSON stream and stored turn), or a supervisor `turn_end`.
 * - `tool`: an MCP tool result with `isError: true` and `_meta.error_code` (the model reads it).
 * - `proxy`: the in-sandbox credential proxy's or the host egress gateway's answer
 *   (`X-Airlock-Error: <code>`).
 * - `control`: the control sockets (daemon ⇄ supervisor, CLI ⇄ daemon) and the CLI's stderr.
 * - `job`: the `error` of a directory-sync job row.
 * - `start`: thrown while a process or a session starts; logged, the process exits or the start fails.
 * - `ui`: made by the browser UI itself (no server answered with a code).
 */
export type ErrorSurface = 'http' | 'turn' | 'tool' | 'proxy' | 'control' | 'job' | 'start' | 'ui';

/** One catalogue entry. */
export interface ErrorSpec {
  /** The HTTP status the code is answered with (or would be, where it travels another way). */
  readonly status: number;
  /** One line: what went wrong, for a maintainer or an operator reading a log. */
  readonly description: string;
  readonly surfaces: readonly ErrorSurface[];
  /** Set on a code kept only until its producers switch: the code to use instead. */
  readonly deprecatedFor?: `ERR_${string}`;
}

/** The shape every area file exports (keys are checked to look like ERR_<AREA>_<WHAT>). */
export type ErrorArea = Readonly<Record<`ERR_${string}`, ErrorSpec>>;
