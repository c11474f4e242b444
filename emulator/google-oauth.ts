import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OAuthRecordedRequest {
  method: string;
  path: string;
  /** Query (authorize) or form (token) parameters; secrets included, tests only. */
  params: Record<string, string>;
}

export interface GoogleOAuthOptions {
  clientId?: string;
  clientSecret?: string;
  /** Lifetime of issued access tokens (Google: 3599). */
  expiresIn?: number;
  /** The account the "user" consents as. */
  email?: string;
  /** Answer the refresh_token grant with invalid_grant (revoked consent). */
  failRefresh?: boolean;
  /** Answer POST /revoke with 503 (the provider is down). */
  failRevoke?: boolean;
}

export interface GoogleOAuth {
  url: string;
  authorizeUrl: string;
  tokenUrl: string;
  revokeUrl: string;
  requests: OAuthRecordedRequest[];
  /** Every token value issued (tests scan logs and the database for them). */
  issued: { access: string[]; refresh: string[] };
  /** Tokens revoked through POST /revoke (a refresh token's revocation ends its grant). */
  revoked: string[];
  options: GoogleOAuthOptions;
  close(): Promise<void>;
}

interface PendingCode {
  clientId: string;
  redirectUri: string;
  scope: string;
  challenge: string;
  method: string;
  offline: boolean;
  expiresAt: number;
}

/** The emulator's state, shared by its endpoints. */
interface OAuthState {
  o: GoogleOAuthOptions;
  codes: Map<string, PendingCode>;
  refresh: Map<string, { clientId: string; scope: string; access: string[] }>;
  issued: { access: string[]; refresh: string[] };
  json: (res: ServerResponse, status: number, body: unknown) => void;
  access: (scope: string) => {
    access_token: string;
    expires_in: number | undefined;
    scope: string;
    token_type: string;
  };
}

/** GET /o/oauth2/v2/auth: a code for the client (PKCE S256 required), straight back to redirect_uri. */
function authorize({ o, codes, json }: OAuthState, u: URL, res: ServerResponse): void {
  const p = u.searchParams;
  const redirect = p.get('redirect_uri');
  if (p.get('client_id') !== o.clientId || !redirect) return json(res, 400, { error: 'invalid_client' });
  if (p.get('response_type') !== 'code') return json(res, 400, { error: 'unsupported_response_type' });
  if (!p.get('code_challenge') || p.get('code_challenge_method') !== 'S256')
    return json(res, 400, { error: 'invalid_request', error_description: 'PKCE S256 required' });
  const code = `4/emu-${randomBytes(16).toString('base64url')}`;
  codes.set(code, {
    clientId: o.clientId!,
    redirectUri: redirect,
    scope: p.get('scope') ?? '',
    challenge: p.get('code_challenge')!,
    method: 'S256',
    offline: p.get('access_type') === 'offline',
    expiresAt: Date.now() + 60_000,
  });
  const back = new URL(redirect);
  back.searchParams.set('code', code);
  if (p.get('state')) back.searchParams.set('state', p.get('state')!);
  back.searchParams.set('scope', p.get('scope') ?? '');
  res.writeHead(302, { location: back.toString() });
  res.end();
}

/** POST /token: the authorization_code and refresh_token grants. */
function token(
  { o, codes, refresh, issued, json, access }: OAuthState,
  form: Record<string, string>,
  res: ServerResponse,
): void {
  if (form.client_id !== o.clientId || (o.clientSecret && form.client_secret !== o.clientSecret))
    return json(res, 401, { error: 'invalid_client' });
  if (form.grant_type === 'authorization_code') {
    const c = codes.get(form.code ?? '');
    codes.delete(form.code ?? ''); // single use
    if (!c || c.expiresAt < Date.now() || c.redirectUri !== form.redirect_uri)
      return json(res, 400, { error: 'invalid_grant' });
    const verifier = form.code_verifier ?? '';
    if (createHash('sha256').update(verifier).digest('base64url') !== c.challenge) {
      return json(res, 400, { error: 'invalid_grant', error_description: 'code_verifier mismatch' });
    }
    const out = access(c.scope) as Record<string, unknown>;
    if (c.offline) {
      const r = `1//emu-${randomBytes(24).toString('base64url')}`;
      refresh.set(r, { clientId: c.clientId, scope: c.scope, access: [out.access_token as string] });
      issued.refresh.push(r);
      out.refresh_token = r;
    }
    const idPayload = Buffer.from(
      JSON.stringify({ iss: 'emulator', sub: 'emu-user', email: o.email, aud: o.clientId }),
    ).toString('base64url');
    out.id_token = `e30.${idPayload}.sig`;
    return json(res, 200, out);
  }
  if (form.grant_type === 'refresh_token') {
    const r = refresh.get(form.refresh_token ?? '');
    if (!r || o.failRefresh)
      return json(res, 400, { error: 'invalid_grant', error_description: 'Token has been expired or revoked.' });
    const a = access(r.scope);
    r.access.push(a.access_token);
    return json(res, 200, a);
  }
  return json(res, 400, { error: 'unsupported_grant_type' });
}

/**
 * A Google-shaped OAuth 2.0 server: `GET /o/oauth2/v2/auth` (consents at once and redirects
 * back with `code` and `state`), `POST /token` (authorization_code with PKCE S256 check,
 * refresh_token grant; answers `access_token`, `expires_in`, `scope`, `token_type`, and a
 * `refresh_token` for offline access), `POST /revoke`. Errors use Google's `{"error": …}`.
 */
export async function start(opts: GoogleOAuthOptions = {}): Promise<GoogleOAuth> {
  const o: GoogleOAuthOptions = {
    clientId: 'airlock-test-client',
    clientSecret: 'airlock-test-client-secret',
    expiresIn: 3599,
    email: 'user@example.test',
    ...opts,
  };
  const requests: OAuthRecordedRequest[] = [];
  const codes = new Map<string, PendingCode>();
  const refresh = new Map<string, { clientId: string; scope: string; access: string[] }>();
  const issued = { access: [] as string[], refresh: [] as string[] };
  const revoked: string[] = [];

  const json = (res: ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'no-store',
      'content-length': Buffer.byteLength(text),
    });
    res.end(text);
  };
  const access = (scope: string) => {
    const a = `ya29.emu-${randomBytes(24).toString('base64url')}`;
    issued.access.push(a);
    return { access_token: a, expires_in: o.expiresIn, scope, token_type: 'Bearer' };
  };

  const st: OAuthState = { o, codes, refresh, issued, json, access };
  const server = createServer((req: IncomingMessage, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      const form =
        req.method === 'POST' ? Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8'))) : {};
      const params = req.method === 'GET' ? Object.fromEntries(u.searchParams) : form;
      requests.push({
        method: req.method ?? '',
        path: u.pathname,
        params: req.method === 'POST' ? { ...Object.fromEntries(u.searchParams), ...form } : params,
      });

      if (req.method === 'GET' && u.pathname === '/o/oauth2/v2/auth') return authorize(st, u, res);
      if (req.method === 'POST' && u.pathname === '/token') return token(st, form, res);
      if (req.method === 'POST' && u.pathname === '/revoke') {
        // Google: `token=` (access or refresh) in the form or, as google-auth-library sends it, in the
        // query; 200 {} when revoked, 400 invalid_token otherwise.
        if (o.failRevoke) return json(res, 503, { error: 'backend_error' });
        const t = form.token ?? u.searchParams.get('token') ?? '';
        const known = refresh.has(t) || (issued.access.includes(t) && !revoked.includes(t));
        if (!known) return json(res, 400, { error: 'invalid_token', error_description: 'Token expired or revoked' });
        // Revoking a refresh token ends its grant: its access tokens stop working too.
        revoked.push(t, ...(refresh.get(t)?.access ?? []));
        refresh.delete(t);
        return json(res, 200, {});
      }
      json(res, 404, { error: 'not_found' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  let closing: Promise<void> | undefined;
  return {
    url,
    authorizeUrl: `${url}/o/oauth2/v2/auth`,
    tokenUrl: `${url}/token`,
    revokeUrl: `${url}/revoke`,
    requests,
    issued,
    revoked,
    options: o,
    close: () =>
      (closing ??= new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}
