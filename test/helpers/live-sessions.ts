/**
 * Shared by the Live sessions browser tests: the real daemon with real sandboxes (Docker), the
 * users carol and root, carol's signed-in client with a chat helper, and root on the page.
 */
import type Docker from 'dockerode';
import type { Page } from 'playwright-core';
import { createLogger, hashPassword } from '../../core/index.js';
import { createUser } from '../../domain/users.js';
import { serve } from '../../daemon/serve.js';
import { Client } from './client.js';
import { loginAsRoot, ROOT_PW } from './admin-browser.js';
import { browserUnavailable } from './browser.js';
import { dataDir, dockerOrSkip, ensureTestImage, runtimeConfig, sweep, uniqueOwner } from '../docker/helpers.js';

/** The Docker engine and the test image; null once the file is skipped with the reason (no browser, or no engine: never under CI=true). */
export async function liveSessionsEngine(
  t: Parameters<typeof dockerOrSkip>[0],
): Promise<{ docker: Docker; image: string } | null> {
  const why = browserUnavailable();
  if (why) {
    t.plan(0, why);
    return null;
  }
  const docker = await dockerOrSkip(t);
  return docker && { docker, image: await ensureTestImage(docker) };
}

/** The daemon (no pool) with carol and root, and carol signed in (`carolSignIn`: her login's status); `tag` names its containers and secrets. Torn down with t. */
export async function startLiveSessions(
  t: { teardown(fn: () => unknown): void },
  docker: Docker,
  image: string,
  tag: string,
) {
  const dir = dataDir(t);
  const owner = uniqueOwner(tag);
  t.teardown(() => sweep(docker, owner));
  const config = runtimeConfig(dir, image, {
    AIRLOCK_PORT: '0',
    AIRLOCK_POOL_SIZE: '0',
    AGENT_USER_TOKEN_SECRET: `${tag}-agent-user-token-secret-0123`,
    MCP_INTERNAL_SECRET: `${tag}-mcp-internal-secret-0123456789`,
  });
  const d = await serve(config, { log: createLogger({ level: 'silent' }), runtime: { owner } });
  t.teardown(async () => {
    await d.runtime?.close({ removeContainers: true });
    await d.close();
  });
  await createUser(d.database.sql, {
    username: 'carol',
    email: 'carol@example.test',
    displayName: 'Carol Jones',
    passwordHash: await hashPassword('carol-password'),
  });
  await createUser(d.database.sql, {
    username: 'root',
    email: 'root@example.test',
    passwordHash: await hashPassword(ROOT_PW),
    isSuperuser: true,
  });
  const carol = new Client(d.web.url);
  const carolSignIn = (await carol.login('carol', 'carol-password')).status;
  /** carol sends `message` (in `session_id`, else a new chat) through the API; the chat's session id once it finished. */
  const chat = async (message: string, session_id?: string) => {
    const res = await carol.request('POST', '/api/chat/messages', { message, ...(session_id ? { session_id } : {}) });
    const lines = (await res.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; session_id?: string });
    const sid = lines.find((l) => l.type === 'done')?.session_id;
    if (!sid) throw new Error(`the chat did not finish: ${JSON.stringify(lines.slice(-2))}`);
    return sid;
  };
  /** The container serving session `id`, if it has one. */
  const containerOf = (id: string) => d.runtime!.sessions.list().find((s) => s.sessionId === id)?.containerId;
  return { d, carolSignIn, chat, containerOf };
}

/** Sign in as root and open the Live sessions page. */
export async function openLiveSessions(page: Page, url: string): Promise<void> {
  await loginAsRoot(page, url);
  await page.goto(url + '/#/admin/sessions');
}
