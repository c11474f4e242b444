import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import { createLogger, type Config, type Logger } from '../core/index.js';
import { openDatabase, type Database } from '../domain/db/index.js';

export interface DaemonBase {
  config: Readonly<Config>;
  /** The database (SQLite or PostgreSQL) every store module takes `database.sql` from. */
  database: Database;
  log: Logger;
}

/** Open the data folder, database and logger the way every command does. */
export async function openBase(config: Readonly<Config>, log?: Logger): Promise<DaemonBase> {
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const logger = log ?? createLogger({ level: config.logLevel });
  const database = await openDatabase({
    url: config.databaseUrl?.reveal(),
    file: join(config.dataDir, 'airlock.db'),
    log: logger,
  });
  return { config, database, log: logger };
}
