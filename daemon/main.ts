#!/usr/bin/env node
import { Command } from 'commander';
import { configProblems, isAppError, loadConfig, SERVE_REQUIRED, type Config } from '../core/index.js';
import { serve } from './serve.js';
import { openBase } from './context.js';
import { createSuperuser } from './cli/create-superuser.js';
import { readPassword } from './cli/prompt.js';
import { syncDirectoryCli } from './directory-sync/index.js';
import { connectorCommands } from './cli/connectors.js';

/** An invalid configuration: list every problem and exit 1. Anything else returns. */
function exitOnConfigProblem(err: unknown): void {
  if (!isAppError(err, 'ERR_CONFIG_INVALID')) return;
  const lines = configProblems(err).map((p) => `  - ${p}`);
  process.stderr.write(`airlock: invalid configuration\n${lines.join('\n')}\n`);
  process.exit(1);
}

/** Load config or exit 1 listing every problem. The only place process.env is read. */
export function configOrExit(require: string[] = []): Readonly<Config> {
  try {
    return loadConfig(process.env, { require });
  } catch (err) {
    exitOnConfigProblem(err);
    throw err;
  }
}

/** On SIGTERM or SIGINT, once: announce, then close; exit 0 when closed, 1 when it fails or takes over 20 s. */
function onStopSignal(announce: (signal: string) => void, close: () => Promise<void>): void {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    announce(signal);
    const force = setTimeout(() => process.exit(1), 20_000);
    force.unref();
    close().then(
      () => process.exit(0),
      (err) => fail(err),
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

/** Print a coded error plainly and exit. */
export function fail(err: unknown): never {
  if (isAppError(err)) process.stderr.write(`airlock: ${err.message} (${err.code})\n`);
  else process.stderr.write(`airlock: ${(err as Error)?.message ?? String(err)}\n`);
  process.exit(1);
}

/** `airlock serve`: the daemon until SIGTERM or SIGINT (then a graceful close, forced after 20 s). */
async function runServe(): Promise<void> {
  const config = configOrExit(SERVE_REQUIRED);
  const d = await serve(config).catch(fail);
  onStopSignal(
    (signal) => d.log.info({ signal }, 'shutting down'),
    () => d.close(),
  );
}

/** `airlock demo`: the whole product on one machine until SIGTERM or SIGINT. */
async function runDemo(): Promise<void> {
  const { startDemo } = await import('./dev/demo.js');
  // The demo builds its own settings over these (emulator URLs, generated secrets) and loads them with loadConfig.
  const demo = await startDemo({ env: { ...process.env } }).catch((err: unknown) => {
    exitOnConfigProblem(err);
    if (isAppError(err, 'ERR_DEMO_DOCKER')) {
      process.stderr.write(`airlock demo: ${err.message}\n`);
      process.exit(1);
    }
    return fail(err);
  });
  // Unlike serve, the demo removes its session sandboxes: their emulators (on ephemeral
  // ports) stop with it, so an adopted sandbox would point at nothing.
  onStopSignal(
    (signal) => process.stdout.write(`\n${signal}: stopping the demo (sandboxes, daemon, then emulators)…\n`),
    () => demo.close({ removeContainers: true }),
  );
}

/** An `ls` subcommand of `parent`, with `--json`. */
function lsCommand(
  parent: Command,
  description: string,
  run: (config: Readonly<Config>, opts: { json?: boolean }) => Promise<void>,
): void {
  parent
    .command('ls')
    .description(description)
    .option('--json', 'JSON output')
    .action(async (opts: { json?: boolean }) => run(configOrExit(), opts).catch(fail));
}

/** `airlock sessions …`: the operator commands that talk to the running daemon. */
function sessionCommands(program: Command): void {
  const sessions = program.command('sessions').description('live sandbox sessions (talks to the running daemon)');
  lsCommand(sessions, 'list live sessions and pool containers', async (config, opts) =>
    (await import('./cli/runtime.js')).sessionsLs(config, opts),
  );
  sessions
    .command('inspect <id>')
    .description('details of one session (session id or container id)')
    .action(async (id: string) => (await import('./cli/runtime.js')).sessionsInspect(configOrExit(), id).catch(fail));
  sessions
    .command('logs <id>')
    .description('the sandbox container log')
    .option('--tail <n>', 'last n lines', '200')
    .action(async (id: string, opts: { tail: string }) =>
      (await import('./cli/runtime.js')).sessionsLogs(configOrExit(), id, opts).catch(fail),
    );
  sessions
    .command('attach <id>')
    .description('interactive shell in the session container (as the agent user, through a TTY)')
    .option('--root', 'shell as root (still without capabilities)')
    .action(async (id: string, opts: { root?: boolean }) =>
      (await import('./cli/runtime.js')).sessionsAttach(configOrExit(), id, opts).catch(fail),
    );
  sessions
    .command('restart [id]')
    .description('restart a session sandbox (the next prompt gets a fresh one)')
    .option('--stale', 'restart every stale session')
    .action(async (id: string | undefined, opts: { stale?: boolean }) =>
      (await import('./cli/runtime.js')).sessionsRestart(configOrExit(), id, opts).catch(fail),
    );
  sessions
    .command('kill <id>')
    .description('stop and remove a session sandbox')
    .action(async (id: string) => (await import('./cli/runtime.js')).sessionsKill(configOrExit(), id).catch(fail));
}

export function buildProgram(): Command {
  const program = new Command();
  program
    .name('airlock')
    .description('Airlock: one warm, locked-down sandbox per chat session, with a credential-injection proxy.')
    .showHelpAfterError();

  program
    .command('serve')
    .description('run the daemon and its web app (needs AGENT_USER_TOKEN_SECRET and MCP_INTERNAL_SECRET)')
    .action(runServe);

  program
    .command('demo')
    .description(
      'the whole product on one machine: emulated Google, IdP and directory, the demo model, a demo admin and user',
    )
    .action(runDemo);

  program
    .command('create-superuser')
    .description('create an admin account; the password is read from stdin or an interactive prompt, never argv')
    .requiredOption('--username <name>', 'login name')
    .requiredOption('--email <email>', 'e-mail address')
    .action(async (opts: { username: string; email: string }) => {
      const config = configOrExit();
      const base = await openBase(config);
      try {
        const password = await readPassword('Password: ');
        const user = await createSuperuser(base.database.sql, { username: opts.username, email: opts.email, password });
        process.stdout.write(`created superuser ${user.username} (id ${user.id})\n`);
      } catch (err) {
        fail(err);
      } finally {
        await base.database.close();
      }
    });

  program
    .command('sync-directory')
    .alias('sync_directory')
    .description('run a directory sync inline (groups, users, memberships, linked teams) with a progress bar')
    .option('--provider <id>', 'IdP connection provider (default: the only one)')
    .option('--json', 'print the finished job as JSON')
    .action(async (opts: { provider?: string; json?: boolean }) => {
      process.exitCode = await syncDirectoryCli(configOrExit(), opts).catch(fail);
    });

  const image = program.command('image').description('the sandbox image');
  image
    .command('build')
    .description('build the sandbox image offline (debootstrap base, cached) and tag it AIRLOCK_IMAGE')
    .option('--tag <tag>', 'image tag (default AIRLOCK_IMAGE)')
    .option('--rebuild-base', 'rebuild the cached base rootfs too')
    .action(async (opts: { tag?: string; rebuildBase?: boolean }) =>
      (await import('./cli/runtime.js')).imageBuildCommand(configOrExit(), opts).catch(fail),
    );

  sessionCommands(program);
  connectorCommands(program, () => configOrExit(), fail);

  program
    .command('doctor')
    .description(
      'what this node runs with: database (engine, schema version), node id and URL, Docker engine, sandbox image',
    )
    .action(async () => {
      process.exitCode = await (await import('./cli/ops.js')).doctor(configOrExit()).catch(fail);
    });

  const db = program.command('db').description('the database');
  db.command('copy')
    .description(
      "copy every row of this install's database (AIRLOCK_DATABASE_URL, or SQLite in the data folder) into a new, empty one",
    )
    .requiredOption(
      '--to <url>',
      'the target, e.g. postgres://airlock:…@db:5432/airlock (migrated first; must hold no users)',
    )
    .action(async (opts: { to: string }) => {
      process.exitCode = await (await import('./cli/ops.js')).dbCopy(configOrExit(), opts.to).catch(fail);
    });

  const nodes = program.command('nodes').description('the nodes of the fleet (from the shared database)');
  lsCommand(nodes, 'every node: id, state, URL, last heartbeat, sessions, capacity, version', async (config, opts) =>
    (await import('./cli/ops.js')).nodesLs(config, opts),
  );

  return program;
}

const isMain =
  process.argv[1] &&
  import.meta.url ===
    (await import('node:url')).pathToFileURL((await import('node:fs')).realpathSync(process.argv[1])).href;
if (isMain) {
  await buildProgram().parseAsync(process.argv);
}
