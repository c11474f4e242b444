/**
 * A small HTTP client with a cookie jar and CSRF handling, over the global fetch,
 * used by integration tests the way a browser would talk to the app.
 */
export class Client {
  readonly base: string;
  readonly cookies = new Map<string, string>();
  csrf?: string;

  constructor(base: string) {
    this.base = base;
  }

  cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  absorb(res: Response): void {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const i = pair.indexOf('=');
      const name = pair.slice(0, i).trim();
      const value = pair.slice(i + 1).trim();
      if (/expires=Thu, 01 Jan 1970/i.test(c) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  async request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
    const h: Record<string, string> = { ...headers };
    if (this.cookies.size) h.cookie = this.cookieHeader();
    if (body !== undefined && typeof body !== 'string') h['content-type'] ??= 'application/json';
    if (this.csrf && !('x-csrf-token' in h)) h['x-csrf-token'] = this.csrf;
    const res = await fetch(this.base + path, {
      method,
      headers: h,
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      redirect: 'manual',
    });
    this.absorb(res);
    return res;
  }

  async json<T = any>(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: T; res: Response }> {
    const res = await this.request(method, path, body, headers);
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // Not JSON: tests look at the raw text.
    }
    return { status: res.status, body: parsed as T, res };
  }

  /** GET /api/auth/csrf and remember the token. */
  async fetchCsrf(): Promise<string> {
    const r = await this.json<{ csrf_token: string }>('GET', '/api/auth/csrf');
    this.csrf = r.body.csrf_token;
    return this.csrf;
  }

  async login(username: string, password: string): Promise<{ status: number; body: any; res: Response }> {
    if (!this.csrf) await this.fetchCsrf();
    const r = await this.json('POST', '/api/auth/login', { username, password });
    if (r.status === 200) this.csrf = r.body.csrf_token;
    return r;
  }
}

/**
 * The JSON objects of an NDJSON body (the chat stream), one a line, as they arrive; empty lines
 * are skipped. Ends with the body; a broken connection throws from the read.
 */
export async function* ndjsonObjects(reader: ReadableStreamDefaultReader<Uint8Array>): AsyncGenerator<any> {
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    buf += dec.decode(value, { stream: true });
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line) yield JSON.parse(line);
    }
  }
}
