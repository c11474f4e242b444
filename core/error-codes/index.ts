/**
 * The error catalogue: every `ERR_*` code the project produces, with its HTTP status, where it
 * can reach someone and one line on what it means. One file per area; this one collects them
 * into one typed union. `AppError` takes its status from here; docs/api.md's error table is
 * rendered from here (test/unit/error-catalogue.test.ts keeps both, and the source tree, in step).
 *
 * Adding a code: put it in the file of its area (a new area gets a new file listed below), then
 * run the catalogue test with AIRLOCK_UPDATE_DOCS=1 to rewrite the docs table.
 */
import { AGENT_ERRORS } from './agent.js';
import { AUTH_ERRORS } from './auth.js';
import { CHAT_ERRORS } from './chat.js';
import { CONNECTOR_OAUTH_ERRORS } from './connector-oauth.js';
import { CONNECTOR_ERRORS } from './connectors.js';
import { DATA_ACCESS_ERRORS } from './data-access.js';
import { FLEET_ERRORS } from './fleet.js';
import { GENERAL_ERRORS } from './general.js';
import { IDENTITY_ERRORS } from './identity.js';
import { PROXY_AREA_ERRORS } from './proxy.js';
import { RUNTIME_ERRORS } from './runtime.js';
import { UPLOAD_ERRORS } from './uploads.js';
import { USAGE_ERRORS } from './usage.js';
import type { ErrorArea, ErrorSpec } from './types.js';

export type { ErrorArea, ErrorSpec, ErrorSurface } from './types.js';
export { PROXY_AREA_ERRORS } from './proxy.js';
export { RUNTIME_ERRORS } from './runtime.js';

/** The areas in the order the docs list them. */
export const ERROR_AREAS = [
  { title: 'General', errors: GENERAL_ERRORS },
  { title: 'Login, credentials, single sign-on', errors: AUTH_ERRORS },
  { title: 'Identity and directory sync', errors: IDENTITY_ERRORS },
  { title: 'Data access', errors: DATA_ACCESS_ERRORS },
  { title: 'Chat, sessions, memories, workspace account', errors: CHAT_ERRORS },
  { title: 'Uploaded files', errors: UPLOAD_ERRORS },
  { title: 'Usage, cost, budgets', errors: USAGE_ERRORS },
  { title: 'Runtime, sandbox, control, egress', errors: RUNTIME_ERRORS },
  { title: 'Fleet (nodes)', errors: FLEET_ERRORS },
  { title: 'Credential proxy', errors: PROXY_AREA_ERRORS },
  { title: 'Agent, model, tools', errors: AGENT_ERRORS },
  { title: 'Connectors (remote MCP servers)', errors: CONNECTOR_ERRORS },
  { title: 'Connectors: OAuth per user', errors: CONNECTOR_OAUTH_ERRORS },
] as const satisfies readonly { title: string; errors: ErrorArea }[];

type AreaErrors = (typeof ERROR_AREAS)[number]['errors'];
type KeysOfUnion<T> = T extends unknown ? keyof T : never;

/** Every error code the project produces. */
export type ErrorCode = KeysOfUnion<AreaErrors>;

/** The whole catalogue, code → spec. */
export const ERROR_CATALOGUE: Readonly<Record<ErrorCode, ErrorSpec>> = Object.freeze(
  Object.assign({}, ...ERROR_AREAS.map((a) => a.errors)) as Record<ErrorCode, ErrorSpec>,
);

export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.prototype.hasOwnProperty.call(ERROR_CATALOGUE, code);
}

/** The catalogue entry of a code, or undefined for a code the catalogue does not know. */
export function errorSpec(code: string): ErrorSpec | undefined {
  return isErrorCode(code) ? ERROR_CATALOGUE[code] : undefined;
}

/**
 * The HTTP status of a code; `fallback` (500) for a code the catalogue does not know, e.g. one
 * read from a peer's message. This replaces guessing a status from a code's spelling.
 */
export function errorStatus(code: string, fallback = 500): number {
  return errorSpec(code)?.status ?? fallback;
}

/** The docs/api.md error table (Markdown), one section per area. */
export function errorTableMarkdown(): string {
  const out: string[] = [];
  for (const area of ERROR_AREAS) {
    out.push(`### ${area.title}`, '', '| code | status | reaches | meaning |', '|---|---|---|---|');
    for (const [code, spec] of Object.entries(area.errors) as [string, ErrorSpec][]) {
      const note = spec.deprecatedFor ? ` *Deprecated: being replaced by \`${spec.deprecatedFor}\`.*` : '';
      out.push(
        `| \`${code}\` | ${spec.status} | ${spec.surfaces.join(', ')} | ${spec.description.replace(/\|/g, '\\|')}${note} |`,
      );
    }
    out.push('');
  }
  return out.join('\n');
}
