/**
 * `airlock connectors …` (docs/connectors.md): the connector registry from the command line, on
 * the database directly (like `nodes ls`). A static secret is read from the environment variable
 * the operator names (`--secret-env NAME`), never from argv (any process can read argv).
 */
import type { Command } from 'commander';
import { join } from 'node:path';
import {
  AppError,
  atRestEncryptor,
  type Config,
  type ConnectorAudience,
  type ConnectorToolMode,
} from '../../core/index.js';
import { textTable } from '../../core/text-table.js';
import type { ConnectorService } from '../../domain/connectors/index.js';
import { openDatabase } from '../../domain/db/index.js';

type Out = (s: string) => void;
const stdout: Out = (s) => process.stdout.write(s);

async function withService<T>(
  config: Readonly<Config>,
  fn: (svc: ConnectorService, db: Awaited<ReturnType<typeof openDatabase>>) => Promise<T>,
): Promise<T> {
  const database = await openDatabase({ url: config.databaseUrl?.reveal(), file: join(config.dataDir, 'airlock.db') });
  // Loaded here, not at the CLI's start: the MCP client is needed by these commands only.
  const { ConnectorService } = await import('../../domain/connectors/index.js');
  try {
    return await fn(
      new ConnectorService({
        db: database.sql,
        enc: atRestEncryptor(config),
        allowHttpLoopback: config.connectors?.allowHttpLoopback ?? false,
      }),
      database,
    );
  } finally {
    await database.close();
  }
}

export interface AddOptions {
  label: string;
  url: string;
  transport?: 'streamable_http' | 'sse';
  auth?: 'none' | 'header' | 'bearer' | 'oauth';
  header?: string;
  secretEnv?: string;
  teams?: string;
  users?: string;
  json?: boolean;
}

function audienceOf(o: AddOptions): ConnectorAudience {
  const ids = (s: string) => s.split(',').map((x) => Number(x.trim()));
  if (o.teams) return { kind: 'teams', team_ids: ids(o.teams) };
  if (o.users) return { kind: 'users', user_ids: ids(o.users) };
  return { kind: 'everyone' };
}

/** `airlock connectors add ID --label … --url …`: add and list its tools. */
export async function connectorsAdd(
  config: Readonly<Config>,
  id: string,
  o: AddOptions,
  env: NodeJS.ProcessEnv = process.env,
  out: Out = stdout,
): Promise<void> {
  const secret = o.secretEnv ? env[o.secretEnv] : undefined;
  if (o.secretEnv && !secret)
    throw new AppError('ERR_CONNECTOR_AUTH', `the environment variable ${o.secretEnv} is not set`);
  const r = await withService(config, (svc) =>
    svc.create(
      {
        id,
        label: o.label,
        url: o.url,
        transport: o.transport,
        audience: audienceOf(o),
        auth_kind: o.auth ?? 'none',
        auth_header_name: o.header ?? null,
        auth_secret: secret ?? null,
      },
      null,
    ),
  );
  if (o.json) return out(JSON.stringify(r, null, 2) + '\n');
  out(`added ${r.connector.id} (${r.connector.transport}) with ${r.connector.tools.length} tools\n`);
  for (const s of r.skipped) out(`  left out ${s.name}: ${s.reason}\n`);
}

/** `airlock connectors ls`. */
export async function connectorsLs(
  config: Readonly<Config>,
  opts: { json?: boolean },
  out: Out = stdout,
): Promise<void> {
  const { listConnectors } = await import('../../domain/connectors/index.js');
  const list = await withService(config, async (_svc, db) => listConnectors(db.sql));
  if (opts.json) return out(JSON.stringify(list, null, 2) + '\n');
  const rows = [['ID', 'LABEL', 'URL', 'AUTH', 'AUDIENCE', 'TOOLS', 'ENABLED']];
  for (const c of list)
    rows.push([c.id, c.label, c.url, c.auth_kind, c.audience.kind, String(c.tools.length), c.enabled ? 'yes' : 'no']);
  out(textTable(rows));
}

/** `airlock connectors tools ID [--set tool=mode …] [--refresh]`. */
export async function connectorsTools(
  config: Readonly<Config>,
  id: string,
  opts: { set?: string[]; refresh?: boolean; json?: boolean },
  out: Out = stdout,
): Promise<void> {
  const c = await withService(config, async (svc, db) => {
    if (opts.refresh) await svc.refreshTools(id, null);
    if (opts.set?.length) {
      const modes: Record<string, ConnectorToolMode> = {};
      for (const s of opts.set) {
        const [name, mode] = s.split('=');
        if (!['enabled', 'disabled', 'ask'].includes(mode))
          throw new AppError('ERR_VALIDATION', `--set ${s}: the mode is enabled, disabled or ask`);
        modes[name] = mode as ConnectorToolMode;
      }
      await svc.setToolModes(id, modes);
    }
    const v = await (await import('../../domain/connectors/index.js')).getConnector(db.sql, id);
    if (!v) throw new AppError('ERR_CONNECTOR_NOT_FOUND', `no connector "${id}"`);
    return v;
  });
  if (opts.json) return out(JSON.stringify(c.tools, null, 2) + '\n');
  const rows = [['TOOL', 'MODE', 'DESCRIPTION']];
  for (const t of c.tools) rows.push([`${c.id}__${t.name}`, t.mode, t.description.replace(/\s+/g, ' ').slice(0, 60)]);
  out(textTable(rows));
}

/** `airlock connectors rm ID`. */
export async function connectorsRm(config: Readonly<Config>, id: string, out: Out = stdout): Promise<void> {
  await withService(config, (svc) => svc.delete(id));
  out(`removed ${id}\n`);
}

/** The `connectors` command tree (daemon/main.ts). */
export function connectorCommands(
  program: Command,
  configOrExit: () => Readonly<Config>,
  fail: (err: unknown) => never,
): void {
  const c = program.command('connectors').description('remote MCP servers the agent may use (docs/connectors.md)');
  c.command('ls')
    .description('every connector: id, label, URL, auth, audience, tools, enabled')
    .option('--json', 'JSON output')
    .action(async (o: { json?: boolean }) => connectorsLs(configOrExit(), o).catch(fail));
  c.command('add <id>')
    .description('add a connector and list its tools from the server')
    .requiredOption('--label <label>', 'what users see')
    .requiredOption('--url <url>', 'the MCP endpoint (https)')
    .option('--transport <t>', 'streamable_http (default) or sse')
    .option('--auth <kind>', 'none, header, bearer or oauth')
    .option('--header <name>', "the header of a static secret (auth 'header')")
    .option('--secret-env <NAME>', 'the environment variable holding the static secret (never on the command line)')
    .option('--teams <ids>', 'only these teams (comma list of ids)')
    .option('--users <ids>', 'only these users (comma list of ids)')
    .option('--json', 'JSON output')
    .action(async (id: string, o: AddOptions) => connectorsAdd(configOrExit(), id, o).catch(fail));
  c.command('rm <id>')
    .description('remove a connector')
    .action(async (id: string) => connectorsRm(configOrExit(), id).catch(fail));
  c.command('tools <id>')
    .description("a connector's tools and their modes")
    .option('--set <tool=mode...>', 'set modes (enabled, disabled, ask)')
    .option('--refresh', 'list the tools from the server again first (modes kept)')
    .option('--json', 'JSON output')
    .action(async (id: string, o: { set?: string[]; refresh?: boolean; json?: boolean }) =>
      connectorsTools(configOrExit(), id, o).catch(fail),
    );
}
