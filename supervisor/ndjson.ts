/**
 * Newline-delimited JSON over a stream, with a cap on line length so a peer cannot make us
 * buffer without bound. Used by the supervisor (control socket, child stdio) and the daemon.
 */
import type { Readable, Writable } from 'node:stream';

export const MAX_LINE_BYTES = 4 * 1024 * 1024;

/** Call `onLine` with each parsed object; malformed lines go to `onBad` (never thrown). */
export function readLines(input: Readable, onLine: (msg: unknown) => void, onBad?: (why: string) => void): void {
  let buf = '';
  input.setEncoding('utf8');
  input.on('data', (chunk: string) => {
    buf += chunk;
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (!line.trim()) continue;
      let msg: unknown;
      try {
        msg = JSON.parse(line);
      } catch {
        onBad?.('malformed json line');
        continue;
      }
      onLine(msg);
    }
    if (buf.length > MAX_LINE_BYTES) {
      buf = '';
      onBad?.('line too long');
    }
  });
}

/** Write one message as a line; false when the stream is gone. */
export function writeLine(out: Writable, msg: unknown): boolean {
  if (out.destroyed || !out.writable) return false;
  out.write(JSON.stringify(msg) + '\n');
  return true;
}
