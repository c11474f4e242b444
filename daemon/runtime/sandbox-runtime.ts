/**
 * The OCI runtime the sandboxes run under (`AIRLOCK_SANDBOX_RUNTIME`): `runc` (namespaces,
 * cgroups, seccomp on the host kernel) or `runsc` (gVisor: a user-space kernel between the
 * sandbox and the host kernel). The engine must have it registered; for runsc with the flags the
 * sandbox needs (docs/security.md, Sandbox runtimes):
 *
 * - `--network=none`: the sandbox has NetworkMode none anyway; without it runsc refuses to start
 *   ("cannot run with network enabled in root network namespace");
 * - `--host-uds=all` (or `create` and `open` separately): the control socket (the supervisor
 *   listens on /run/airlock/control.sock, the daemon connects from the host) and the egress
 *   socket (the daemon listens, the in-sandbox proxy connects) cross the /run/airlock bind mount;
 *   gVisor refuses both with EPERM unless host unix sockets are allowed.
 */
import { AppError } from '../../core/index.js';

export type SandboxRuntimeName = 'runc' | 'runsc';

/** What the engine reports of its runtimes (`docker info` → Runtimes). */
export type EngineRuntimes = Record<string, { path?: string; runtimeArgs?: string[] | null } | undefined>;

export interface RuntimeCheck {
  ok: boolean;
  /** One line for `doctor` and the start log. */
  summary: string;
  /** What is missing, when not ok. */
  problem?: string;
}

/** The runsc flags a sandbox needs, as `name=value`. */
export const RUNSC_REQUIRED_FLAGS: readonly { flag: string; accepts: readonly string[] }[] = [
  { flag: '--network', accepts: ['none'] },
  { flag: '--host-uds', accepts: ['all'] },
];

/** The daemon.json fragment that registers runsc as the sandbox needs it. */
export const RUNSC_DAEMON_JSON =
  '{"runtimes":{"runsc":{"path":"/usr/bin/runsc","runtimeArgs":["--network=none","--host-uds=all"]}}}';

function flagValue(args: readonly string[], flag: string): string | undefined {
  let v: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i].replace(/^--?/, '--');
    if (a === flag && i + 1 < args.length) v = args[++i];
    else if (a.startsWith(flag + '=')) v = a.slice(flag.length + 1);
  }
  return v;
}

/** Whether the engine can run sandboxes under `runtime` (pure: the engine's runtime table in). */
export function checkRuntime(runtimes: EngineRuntimes | undefined, runtime: SandboxRuntimeName): RuntimeCheck {
  const have = Object.keys(runtimes ?? {});
  const entry = runtimes?.[runtime];
  if (!entry) {
    const hint =
      runtime === 'runsc'
        ? ` Install gVisor (apt-get install runsc) and register it in the engine's daemon.json: ${RUNSC_DAEMON_JSON}, then reload the engine.`
        : '';
    return {
      ok: false,
      summary: `${runtime} (not registered with the engine; it has ${have.join(', ') || 'none'})`,
      problem: `the container engine has no runtime "${runtime}" (AIRLOCK_SANDBOX_RUNTIME); it has: ${have.join(', ') || 'none'}.${hint}`,
    };
  }
  const args = entry.runtimeArgs ?? [];
  if (runtime === 'runsc') {
    const wrong = RUNSC_REQUIRED_FLAGS.filter((f) => !f.accepts.includes(flagValue(args, f.flag) ?? ''));
    if (wrong.length) {
      const need = wrong.map((f) => `${f.flag}=${f.accepts[0]}`).join(' ');
      return {
        ok: false,
        summary: `runsc (${entry.path ?? '?'} ${args.join(' ')}; missing ${need})`,
        problem: `the engine's runsc runtime lacks ${need} in its runtimeArgs; register it as ${RUNSC_DAEMON_JSON} (docs/security.md, Sandbox runtimes)`,
      };
    }
  }
  return {
    ok: true,
    summary: `${runtime}${entry.path ? ` (${entry.path}${args.length ? ' ' + args.join(' ') : ''})` : ''}`,
  };
}

/** Throws ERR_SANDBOX_RUNTIME when the engine cannot run the configured runtime. */
export function requireRuntime(runtimes: EngineRuntimes | undefined, runtime: SandboxRuntimeName): string {
  const c = checkRuntime(runtimes, runtime);
  if (!c.ok) throw new AppError('ERR_SANDBOX_RUNTIME', c.problem ?? 'the sandbox runtime is not available');
  return c.summary;
}
