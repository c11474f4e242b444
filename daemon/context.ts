import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import { createLogger, openDatabase, type Config, type Db, type Logger } from '../core/index.js';

export interface DaemonBase {
  config: Readonly<Config>;
  db: Db;
  log: Logger;
}

/** Open the data folder, database and logger the way every command does. */
export async function openBase(config: Readonly<Config>, log?: Logger): Promise<DaemonBase> {
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const db = await openDatabase(join(config.dataDir, 'airlock.db'));
  return { config, db, log: log ?? createLogger({ level: config.logLevel }) };
}
