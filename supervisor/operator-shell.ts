/**
 * The operator's shell (`airlock sessions attach`): after the reply to `shell`, the control
 * connection is a raw pipe to /bin/sh as the agent user (supervisor.ts hands the connection over).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import type { ControlMessage } from '../core/sandbox-protocol.js';
import type { LineReader, LineWriter } from '../core/ndjson.js';

/** One control connection to the supervisor. */
export type Conn = { socket: Socket; out: LineWriter<ControlMessage>; reader?: LineReader; shell?: ChildProcess };

export function operatorShell(
  conn: Conn,
  as: { uid: number; gid: number; cwd: string },
  reply: (data: Record<string, unknown>) => void,
): void {
  const sh = spawn('/bin/sh', ['-i'], {
    uid: as.uid,
    gid: as.gid,
    cwd: as.cwd,
    env: { HOME: '/home/agent', PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8', PS1: 'sandbox$ ' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  conn.shell = sh;
  // From here on the connection carries raw shell bytes, not protocol lines.
  conn.reader?.stop();
  reply({ pid: sh.pid ?? null });
  conn.out.flush(); // the reply before the first raw byte
  conn.socket.pipe(sh.stdin!);
  sh.stdout!.pipe(conn.socket, { end: false });
  sh.stderr!.pipe(conn.socket, { end: false });
  sh.stdin!.on('error', () => undefined);
  sh.on('exit', () => conn.socket.end());
}
