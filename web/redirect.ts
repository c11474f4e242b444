/**
 * Redirect targets a client hands us (account connect `return_to`, SSO `callback_url`, login
 * `next`). The check runs on the target AFTER resolution against the public origin, because
 * resolution changes it: `new URL('/.//evil.example/x', origin)` removes the dot segment and
 * leaves the path `//evil.example/x`, which a browser reads as another host. So a target is
 * accepted only when, once resolved, it is on the public origin, carries no credentials, and its
 * path does not start with `//` (or `/\`, which browsers treat the same). What is returned is
 * the resolved path, query and fragment only (`/chat?x=1`): never a scheme or host from the input.
 */
export function resolveRedirect(
  raw: unknown,
  publicOrigin: string,
  opts: { allowAbsolute?: boolean } = {},
): string | null {
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > 2048) return null;
  // Control characters and whitespace are stripped by URL parsers in ways browsers may not share.
  // eslint-disable-next-line no-control-regex -- matching control characters is the point here
  if (/[\x00-\x20\x7f]/.test(raw)) return null;
  // A relative target must be an absolute path; absolute URLs only where the caller allows them.
  if (!raw.startsWith('/') && !opts.allowAbsolute) return null;
  if (raw.startsWith('//') || raw.startsWith('/\\')) return null;
  let origin: URL;
  let u: URL;
  try {
    origin = new URL(publicOrigin);
    u = new URL(raw, origin);
  } catch {
    return null; // not a URL at all: refused like any other bad target
  }
  if (u.origin !== origin.origin || u.username || u.password) return null;
  const path = u.pathname;
  if (!path.startsWith('/') || path.startsWith('//') || path.startsWith('/\\')) return null;
  // An encoded slash or backslash at the start survives another decode as `//`: refuse it too.
  if (/^\/(?:%2f|%5c)/i.test(path)) return null;
  return path + u.search + u.hash;
}
