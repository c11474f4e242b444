/**
 * A load rig (docs/capacity.md): real `airlock serve` child processes (one node on SQLite, or two
 * on one throwaway PostgreSQL cluster), each on its own data folder and Docker owner label; the
 * scripted OpenAI-shaped model with a set latency; the Google emulator as every user's connected
 * account; users made in the database before the nodes start. The model's script follows the
 * prompts the simulated users send (load-users.ts): `#mail` asks for one send_email, `#tool` for one
 * fetch_memory, anything else gets text. Every prompt names its chat and turn (`[c=… t=…]`), so the
 * model records, for each turn it was asked, which earlier turns of that chat its request held:
 * the context check.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type Docker from 'dockerode';
import { atRestEncryptor, hashPassword, loadConfig, WORKSPACE_SCOPES } from '../../core/index.js';
import { openDatabase } from '../../domain/db/index.js';
import { AccountStore } from '../../domain/accounts.js';
import { createUser } from '../../domain/users.js';
import * as google from '../../emulator/google.js';
import * as openaiModel from '../../emulator/model-openai.js';
import { LABEL_OWNER } from '../../daemon/runtime/session-manager.js';
import { freePort } from './app.js';
import { createPgDatabase, startPgCluster, type PgCluster } from './postgres.js';
import { waitFor } from './wait.js';
import { sweep } from '../docker/helpers.js';

const DIST = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
const CLI = join(DIST, 'daemon', 'main.js');
const MODEL_KEY = 'sk-load-model-key-0123456789abcdef';
export const PROMPT_TAG = /\[c=([\w-]+) t=(\d+)\]/;

export interface LoadNode {
  id: string;
  url: string;
  dir: string;
  owner: string;
  env: Record<string, string>;
  proc?: ChildProcess;
  out: string;
  /** The serve process's pid while it runs. */
  pid(): number | undefined;
  start(): Promise<void>;
  /** SIGKILL (no clean-up) or SIGTERM; resolves when the process is gone. */
  stop(signal: NodeJS.Signals): Promise<void>;
  running(): boolean;
}

export interface RigOptions {
  image: string;
  nodes: 1 | 2;
  users: number;
  /** Latency of each model call before its first chunk. */
  modelDelayMs: number;
  env?: Record<string, string>;
}

export interface Rig {
  model: openaiModel.ModelServer;
  google: google.GoogleEmulator;
  pg?: PgCluster;
  nodes: LoadNode[];
  users: { username: string; password: string }[];
  /** chat → turn → the earlier turns of that chat the model's last request for it held. */
  seen: Map<string, Map<number, Set<number>>>;
  /** mail subject → the send_email result the model was last shown for it (its later requests). */
  mailResults: Map<string, string>;
  /** Stop the nodes (SIGTERM), then count what they left (containers of their owners, mounts and loop devices under their data folders), then remove it all. */
  close(docker: Docker): Promise<Leftovers>;
}

export interface Leftovers {
  containers: number;
  mounts: string[];
  loops: number;
}

/** Mount points and loop devices whose path is under the folder. */
export function leftoversUnder(dir: string): { mounts: string[]; loops: number } {
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4])
    .filter((m) => m && (m === dir || m.startsWith(dir + '/')));
  let loops = 0;
  try {
    loops = execFileSync('losetup', ['-a'], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l.includes(dir)).length;
  } catch {
    // no losetup here: counted as none
  }
  return { mounts, loops };
}

function textOf(m: any): string {
  if (typeof m?.content === 'string') return m.content;
  if (Array.isArray(m?.content)) return m.content.map((p: any) => p?.text ?? '').join('');
  return '';
}

/** What the model was told of each send_email call in this request: subject → the tool result. */
function noteMailResults(msgs: any[], into: Map<string, string>): void {
  const subjects = new Map<string, string>();
  for (const m of msgs) {
    for (const c of m.role === 'assistant' ? (m.tool_calls ?? []) : []) {
      if (c.function?.name !== 'send_email') continue;
      const subject = (() => {
        try {
          return String(JSON.parse(c.function.arguments).subject);
        } catch {
          return '?';
        }
      })();
      subjects.set(c.id, subject);
    }
    if (m.role === 'tool' && subjects.has(m.tool_call_id)) into.set(subjects.get(m.tool_call_id)!, textOf(m));
  }
}

function respond(seen: Rig['seen'], mailResults: Rig['mailResults'], delay: number) {
  return (body: any): openaiModel.ModelStep => {
    const msgs: any[] = body.messages ?? [];
    noteMailResults(msgs, mailResults);
    const last = msgs.at(-1);
    if (last?.role !== 'user') return { kind: 'reply', text: 'Done: the tool answered.', delay_ms: delay };
    const tag = PROMPT_TAG.exec(textOf(last));
    if (tag) {
      const held = new Set<number>();
      for (const m of msgs.slice(0, -1)) {
        const x = m.role === 'user' ? PROMPT_TAG.exec(textOf(m)) : null;
        if (x && x[1] === tag[1]) held.add(Number(x[2]));
      }
      if (!seen.has(tag[1])) seen.set(tag[1], new Map());
      seen.get(tag[1])!.set(Number(tag[2]), held);
    }
    const text = textOf(last);
    if (text.includes('#mail') && tag)
      return {
        kind: 'reply',
        delay_ms: delay,
        tool_calls: [
          {
            name: 'send_email',
            arguments: { to: ['rcpt@example.test'], subject: `${tag[1]}/${tag[2]}`, text: 'a load test mail' },
          },
        ],
      };
    if (text.includes('#tool'))
      return { kind: 'reply', delay_ms: delay, tool_calls: [{ name: 'fetch_memory', arguments: { query: 'load' } }] };
    return { kind: 'reply', text: ['ok, ', 'noted: a short answer ', 'of a few words.'], delay_ms: delay };
  };
}

function node(id: string, env: Record<string, string>, port: number): LoadNode {
  const dir = mkdtempSync(join(tmpdir(), `airlock-load-${id}-`));
  const owner = `airlock-load-${id}-${randomBytes(4).toString('hex')}`;
  writeFileSync(join(dir, 'runtime-owner'), owner + '\n', { mode: 0o600 });
  const url = `http://127.0.0.1:${port}`;
  const n: LoadNode = {
    id,
    url,
    dir,
    owner,
    out: '',
    env: { ...env, AIRLOCK_DATA_DIR: dir, AIRLOCK_PORT: String(port), AIRLOCK_NODE_ID: id, AIRLOCK_NODE_URL: url },
    pid: () => (n.running() ? n.proc!.pid : undefined),
    running: () => !!n.proc && n.proc.exitCode === null && n.proc.signalCode === null,
    async start() {
      const p = spawn(process.execPath, [CLI, 'serve'], {
        env: { PATH: process.env.PATH ?? '', ...n.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      n.proc = p;
      const keep = (d: Buffer) => (n.out = (n.out + d.toString()).slice(-20_000));
      p.stdout!.on('data', keep);
      p.stderr!.on('data', keep);
      await waitFor(
        async () => {
          if (!n.running()) throw new Error(`${id} exited: ${n.out.slice(-2000)}`);
          return fetch(`${url}/healthz`).then(
            (r) => r.ok,
            () => false,
          );
        },
        `${id} to listen`,
        120_000,
        100,
      );
    },
    async stop(signal) {
      if (!n.running()) return;
      const gone = new Promise((r) => n.proc!.once('close', r));
      n.proc!.kill(signal);
      await gone;
    },
  };
  return n;
}

/**
 * The settings of an `airlock serve` on the scripted OpenAI-shaped model and the Google emulator
 * (the load rig's, and the web-cpu bench's): secrets named after the rig, warnings only.
 */
export function scriptedServeEnv(
  rig: string,
  modelUrl: string,
  modelKey: string,
  googleUrl: string,
): Record<string, string> {
  return {
    AIRLOCK_ENCRYPTION_KEY: 'a'.repeat(64),
    AGENT_USER_TOKEN_SECRET: `${rig}-agent-user-token-secret-0123`,
    MCP_INTERNAL_SECRET: `${rig}-mcp-internal-secret-0123456789`,
    AIRLOCK_MODEL_PROVIDER: 'openai',
    AIRLOCK_MODEL: 'load',
    AIRLOCK_MODEL_BASE_URL: modelUrl,
    AIRLOCK_MODEL_API_KEY: modelKey,
    AIRLOCK_GOOGLE_MAIL_BASE_URL: googleUrl,
    AIRLOCK_GOOGLE_SHEETS_BASE_URL: googleUrl,
    AIRLOCK_GOOGLE_DRIVE_BASE_URL: googleUrl,
    AIRLOCK_MAIL_ALLOW_DOMAINS: 'example.test',
    AIRLOCK_LOG_LEVEL: 'warn',
  };
}

/** Users (each with the Google emulator as connected account), then the nodes, started. */
export async function startRig(o: RigOptions): Promise<Rig> {
  const seen: Rig['seen'] = new Map();
  const mailResults: Rig['mailResults'] = new Map();
  const model = await openaiModel.start({ apiKey: MODEL_KEY, respond: respond(seen, mailResults, o.modelDelayMs) });
  const g = await google.start({ userEmail: 'user@example.test' });
  let pg: PgCluster | undefined;
  // A rig that fails to start (a node refusing its settings, the database) stops what it started.
  try {
    let dbUrl: string | undefined;
    if (o.nodes === 2) {
      pg = startPgCluster(await freePort());
      dbUrl = (await createPgDatabase(pg.url)).url;
    }
    const shared: Record<string, string> = {
      AIRLOCK_IMAGE: o.image,
      ...scriptedServeEnv('load', model.url, MODEL_KEY, g.url),
      AIRLOCK_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
      AIRLOCK_POOL_SIZE: '4',
      AIRLOCK_MAX_STARTING: '4',
      ...(dbUrl
        ? {
            AIRLOCK_DATABASE_URL: dbUrl,
            AIRLOCK_NODE_SECRET: randomBytes(24).toString('hex'),
            AIRLOCK_NODE_HEARTBEAT_S: '1',
            AIRLOCK_NODE_LOST_S: '4',
            AIRLOCK_FLEET_ALLOW_HTTP: 'true',
          }
        : {}),
      ...o.env,
    };
    const nodes: LoadNode[] = [];
    for (let i = 0; i < o.nodes; i++) nodes.push(node(`node-${'ab'[i]}`, shared, await freePort()));
    const first = loadConfig(nodes[0].env);
    const database = await openDatabase({ url: dbUrl, file: join(nodes[0].dir, 'airlock.db') });
    const users: Rig['users'] = [];
    try {
      const accounts = new AccountStore(database.sql, atRestEncryptor(first));
      const hash = await hashPassword('load-user-password-0123');
      for (let i = 0; i < o.users; i++) {
        const u = await createUser(database.sql, {
          username: `load${i}`,
          email: `load${i}@example.test`,
          passwordHash: hash,
        });
        await accounts.connect(u.id, {
          email: `load${i}@example.test`,
          scopes: [...WORKSPACE_SCOPES],
          accessToken: g.token,
          expiresAt: Date.now() + 24 * 3600_000,
        });
        users.push({ username: `load${i}`, password: 'load-user-password-0123' });
      }
    } finally {
      await database.close();
    }
    for (const n of nodes) await n.start();
    return {
      model,
      google: g,
      pg,
      nodes,
      users,
      seen,
      mailResults,
      async close(docker) {
        for (const n of nodes) await n.stop('SIGTERM').catch(() => undefined);
        const left: Leftovers = { containers: 0, mounts: [], loops: 0 };
        for (const n of nodes) {
          left.containers += (await ownedContainers(docker, n.owner)).length;
          const u = leftoversUnder(n.dir);
          left.mounts.push(...u.mounts.map((m) => m.slice(n.dir.length) || '/'));
          left.loops += u.loops;
          await sweep(docker, n.owner);
          for (const m of u.mounts.sort((a, b) => b.length - a.length)) spawnSync('umount', ['-l', m]);
        }
        await model.close();
        await g.close();
        pg?.stop();
        for (const n of nodes) rmSync(n.dir, { recursive: true, force: true });
        return left;
      },
    };
  } catch (err) {
    await model.close();
    await g.close();
    pg?.stop();
    throw err;
  }
}

export async function ownedContainers(docker: Docker, owner: string, running = false): Promise<Docker.ContainerInfo[]> {
  const all = await docker.listContainers({ all: !running, filters: { label: [`${LABEL_OWNER}=${owner}`] } });
  return all;
}

/** Remove every container of this owner (test/docker/helpers.ts). */
export { sweep as removeOwned };

/** CPU seconds (user + system), RSS bytes and open fds of one process, from /proc. */
export function procFigures(pid: number): { cpuS: number; rss: number; fds: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const tick = 100; // USER_HZ on Linux
  const cpuS = (Number(f[11]) + Number(f[12])) / tick;
  const rss = Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
  return { cpuS, rss, fds: readdirSync(`/proc/${pid}/fd`).length };
}

/** PSS in bytes of a process and all its descendants (smaps_rollup), as bench/density.bench.ts reads it. */
export function treePss(pid: number): number {
  const out = [pid];
  let sum = 0;
  for (let i = 0; i < out.length; i++) {
    try {
      sum += Number(/^Pss:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${out[i]}/smaps_rollup`, 'utf8'))?.[1] ?? 0) * 1024;
      for (const t of readdirSync(`/proc/${out[i]}/task`))
        for (const c of readFileSync(`/proc/${out[i]}/task/${t}/children`, 'utf8').split(/\s+/).filter(Boolean))
          out.push(Number(c));
    } catch {
      // gone meanwhile
    }
  }
  return sum;
}

/** Mean PSS (MiB) of the sandboxes running under the given owners (a pool member claimed by a chat keeps its pool labels, so all are counted). */
export async function pssPerSession(docker: Docker, owners: string[]): Promise<{ n: number; meanMiB: number }> {
  const sizes: number[] = [];
  for (const owner of owners)
    for (const c of await ownedContainers(docker, owner, true)) {
      const pid = (
        await docker
          .getContainer(c.Id)
          .inspect()
          .catch(() => null)
      )?.State.Pid;
      if (pid) sizes.push(treePss(pid));
    }
  return { n: sizes.length, meanMiB: sizes.length ? sizes.reduce((a, b) => a + b, 0) / sizes.length / 2 ** 20 : 0 };
}
