/**
 * The operator API behind `<data dir>/control.sock` (`airlock sessions …`, and `kill-user` from
 * `airlock sync-directory`): one typed request union, checked field by field before anything runs.
 */
import { AppError } from '../../core/index.js';
import type { SandboxDetails, SandboxDriver } from './sandbox-driver.js';
import type { SandboxInfo } from './sandbox.js';

export type OperatorRequest =
  | { cmd: 'ls' }
  | { cmd: 'inspect'; id: string }
  | { cmd: 'logs'; id: string; tail: number }
  | { cmd: 'kill'; id: string }
  | { cmd: 'restart'; id: string }
  | { cmd: 'restart-stale' }
  | { cmd: 'kill-user'; userId: number }
  | { cmd: 'policy-changed'; userIds: number[] };

/** `logs`: the container's log, its stdout and stderr chunks in order (base64: logs are bytes). */
export interface LogsResult {
  chunks: { stream: 'stdout' | 'stderr'; data: string }[];
}

/** Lines `logs` returns at most (the engine keeps a bounded log anyway). */
export const LOGS_TAIL_MAX = 10_000;

export type InspectResult = SandboxInfo & { container: SandboxDetails; supervisor: Record<string, unknown> | null };

/** What the operator API acts on (the session manager). */
export interface OperatorTarget {
  list(): SandboxInfo[];
  inspect(id: string): Promise<InspectResult>;
  containerOf(id: string): string;
  kill(id: string): Promise<SandboxInfo>;
  restart(id: string): Promise<SandboxInfo>;
  restartStale(): Promise<{ restarted: string[]; skipped: string[] }>;
  killForUser(userId: number): Promise<number>;
  policyChanged(userIds: number[]): void;
}

const usage = (message: string) => new AppError('ERR_CLI_USAGE', message);
const isUserId = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v > 0;

/** Check a request read from the socket; ERR_CLI_USAGE (400) names what is wrong. */
export function parseOperatorRequest(raw: unknown): OperatorRequest {
  if (!raw || typeof raw !== 'object') throw usage('a request is a JSON object with a cmd');
  const r = raw as Record<string, unknown>;
  switch (r.cmd) {
    case 'ls':
    case 'restart-stale':
      return { cmd: r.cmd };
    case 'inspect':
    case 'kill':
    case 'restart':
      // An absent id finds nothing (ERR_SESSION_NOT_FOUND), as before the request was typed.
      return { cmd: r.cmd, id: r.id === undefined || r.id === null ? '' : String(r.id) };
    case 'logs': {
      const tail = r.tail === undefined ? 200 : r.tail;
      if (typeof tail !== 'number' || !Number.isSafeInteger(tail) || tail < 1 || tail > LOGS_TAIL_MAX)
        throw usage(`logs: tail is a whole number from 1 to ${LOGS_TAIL_MAX}`);
      return { cmd: 'logs', id: r.id === undefined || r.id === null ? '' : String(r.id), tail };
    }
    case 'kill-user':
      if (!isUserId(r.userId)) throw usage('kill-user needs a positive integer userId');
      return { cmd: 'kill-user', userId: r.userId };
    case 'policy-changed':
      if (!Array.isArray(r.userIds) || !r.userIds.every(isUserId))
        throw usage('policy-changed needs userIds, a list of positive integers');
      return { cmd: 'policy-changed', userIds: r.userIds };
    default:
      throw usage('unknown command');
  }
}

export async function handleOperatorRequest(
  target: OperatorTarget,
  raw: unknown,
  engine: Pick<SandboxDriver, 'logs'>,
): Promise<unknown> {
  const req = parseOperatorRequest(raw);
  switch (req.cmd) {
    case 'ls':
      return target.list();
    case 'inspect':
      return target.inspect(req.id);
    case 'logs': {
      const chunks: LogsResult['chunks'] = [];
      await engine.logs(target.containerOf(req.id), req.tail, {
        stdout: (c) => chunks.push({ stream: 'stdout', data: c.toString('base64') }),
        stderr: (c) => chunks.push({ stream: 'stderr', data: c.toString('base64') }),
      });
      return { chunks } satisfies LogsResult;
    }
    case 'kill':
      return target.kill(req.id);
    case 'restart':
      return target.restart(req.id);
    case 'restart-stale':
      return target.restartStale();
    case 'kill-user':
      return { userId: req.userId, killed: await target.killForUser(req.userId) };
    case 'policy-changed':
      target.policyChanged(req.userIds);
      return { userIds: req.userIds };
  }
}
