/**
 * Shared by the sandbox Docker tests: run a turn, record lifecycle hooks, wait, and start a
 * session manager on the engine under test (torn down with its containers).
 */
import { randomBytes } from 'node:crypto';
import type Docker from 'dockerode';
import { createLogger } from '../../core/index.js';
import type { AgentEvent } from '../../core/sandbox-protocol.js';
import { SessionManager, type SessionHooks } from '../../daemon/runtime/session-manager.js';
import { dataDir, runtimeConfig, sweep, uniqueOwner } from './helpers.js';
import { waitFor } from '../helpers/wait.js';

const log = createLogger({ level: 'warn', destination: process.stderr });

export function turn(
  m: SessionManager,
  sessionId: string,
  prompt: string,
  userId = 7,
  onEvent?: (e: AgentEvent) => void,
) {
  const events: AgentEvent[] = [];
  return m
    .runTurn({
      userId,
      sessionId,
      turnId: randomBytes(6).toString('hex'),
      prompt,
      signal: new AbortController().signal,
      onEvent: (e) => (events.push(e), onEvent?.(e)),
    })
    .then((r) => ({ ...r, events }));
}

/** Records every hook call, in order. */
export function recordHooks() {
  const calls: string[] = [];
  const hooks: SessionHooks = {
    onSessionLive: (s) => calls.push(`live ${s.sessionId}${s.adopted ? ' adopted' : ''}`),
    onSessionEnded: (id, why) => calls.push(`ended ${id} ${why}`),
  };
  return { calls, hooks };
}

/** test/helpers/wait.ts's waitFor with this file's 20 s default. */
export async function until<T>(fn: () => T | undefined | false, what: string, ms = 20_000): Promise<T> {
  return (await waitFor(fn, what, ms, 50)) as T;
}

export async function manager(
  tt: { teardown(fn: () => unknown): void },
  docker: Docker,
  image: string,
  env: Record<string, string> = {},
  extra: Partial<ConstructorParameters<typeof SessionManager>[0]> = {},
) {
  const owner = uniqueOwner('sbx');
  const dir = dataDir(tt);
  const config = runtimeConfig(dir, image, env);
  tt.teardown(() => sweep(docker, owner));
  const m = new SessionManager({ config, docker, log, owner, ...extra });
  tt.teardown(() => m.close({ removeContainers: true }));
  await m.start();
  return { m, dir, owner, config };
}

/** The airlock.* labels the runtime set on a container (not the image's own airlock.image). */
export function airlockLabels(labels: unknown): Record<string, string> {
  return Object.fromEntries(
    Object.entries((labels ?? {}) as Record<string, string>).filter(
      ([k]) => k.startsWith('airlock.') && k !== 'airlock.image',
    ),
  );
}

export function textOf(events: unknown[]): string {
  return (events as { type: string; text?: string }[])
    .filter((e) => e.type === 'text_delta')
    .map((e) => e.text)
    .join('');
}
