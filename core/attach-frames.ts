import { protocolError } from './ndjson.js';

/**
 * `airlock sessions attach` for a session another node of the fleet owns: after a signed HTTP
 * upgrade (`Upgrade: airlock-attach`, docs/deploy.md), the two nodes exchange frames over the
 * connection, so a terminal's bytes, its size and the shell's exit status travel apart:
 *
 *   frame = type (1 byte) · length (4 bytes, big-endian) · payload (length bytes)
 *
 * | type | from → to | payload |
 * |---|---|---|
 * | `d` | both ways | terminal bytes (keys in, screen out) |
 * | `r` | CLI → owner | the terminal's size: rows, columns (2 × uint16 BE) |
 * | `z` | CLI → owner | end of input (stdin closed); no payload |
 * | `x` | owner → CLI | the shell's exit status (int32 BE); the last frame |
 */
export const ATTACH_UPGRADE = 'airlock-attach';

/** A frame's payload at most (a terminal sends far less; a longer one is refused). */
export const MAX_ATTACH_FRAME = 1 << 20;

/** A terminal a shell runs on: the operator's own (local attach) or one carried in frames. */
export interface ShellTerminal {
  stdin: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?(raw: boolean): unknown };
  stdout: NodeJS.WritableStream & { rows?: number; columns?: number; on(ev: 'resize', fn: () => void): unknown };
}

export type AttachFrame =
  | { type: 'data'; data: Buffer }
  | { type: 'resize'; rows: number; cols: number }
  | { type: 'eof' }
  | { type: 'exit'; code: number };

const TYPE_BYTE = { data: 0x64, resize: 0x72, eof: 0x7a, exit: 0x78 } as const;

export function encodeAttachFrame(f: AttachFrame): Buffer {
  let payload: Buffer;
  switch (f.type) {
    case 'data':
      payload = f.data;
      break;
    case 'resize':
      payload = Buffer.alloc(4);
      payload.writeUInt16BE(clampSize(f.rows), 0);
      payload.writeUInt16BE(clampSize(f.cols), 2);
      break;
    case 'eof':
      payload = Buffer.alloc(0);
      break;
    case 'exit':
      payload = Buffer.alloc(4);
      payload.writeInt32BE(f.code | 0, 0);
      break;
  }
  const head = Buffer.alloc(5);
  head[0] = TYPE_BYTE[f.type];
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

function clampSize(n: number): number {
  return Number.isInteger(n) && n > 0 ? Math.min(n, 0xffff) : 0;
}

/**
 * Splits a byte stream into frames, whatever the chunking. `push` returns the whole frames the
 * bytes completed and throws a protocol rejection (ERR_PROTOCOL_BAD_MESSAGE) on an unknown type or a
 * payload of the wrong size, ERR_PROTOCOL_LINE_TOO_LONG on one over MAX_ATTACH_FRAME; after a
 * throw the reader is done (the connection is to be closed).
 */
export class AttachFrameReader {
  #buf: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): AttachFrame[] {
    this.#buf = this.#buf.length ? Buffer.concat([this.#buf, chunk]) : chunk;
    const out: AttachFrame[] = [];
    while (this.#buf.length >= 5) {
      const type = this.#buf[0];
      const len = this.#buf.readUInt32BE(1);
      if (len > MAX_ATTACH_FRAME)
        throw protocolError('ERR_PROTOCOL_LINE_TOO_LONG', `attach frame of ${len} bytes (at most ${MAX_ATTACH_FRAME})`);
      if (this.#buf.length < 5 + len) break;
      const payload = this.#buf.subarray(5, 5 + len);
      this.#buf = this.#buf.subarray(5 + len);
      out.push(decode(type, payload));
    }
    return out;
  }
}

function decode(type: number, p: Buffer): AttachFrame {
  const bad = (what: string) => protocolError('ERR_PROTOCOL_BAD_MESSAGE', `attach frame: ${what}`, [what]);
  switch (type) {
    case TYPE_BYTE.data:
      return { type: 'data', data: Buffer.from(p) };
    case TYPE_BYTE.resize:
      if (p.length !== 4) throw bad('resize: 4 bytes expected');
      return { type: 'resize', rows: p.readUInt16BE(0), cols: p.readUInt16BE(2) };
    case TYPE_BYTE.eof:
      if (p.length !== 0) throw bad('eof: no payload expected');
      return { type: 'eof' };
    case TYPE_BYTE.exit:
      if (p.length !== 4) throw bad('exit: 4 bytes expected');
      return { type: 'exit', code: p.readInt32BE(0) };
    default:
      throw bad(`unknown type 0x${type.toString(16).padStart(2, '0')}`);
  }
}
