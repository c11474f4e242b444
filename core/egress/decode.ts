import { PassThrough, type Readable, type Transform } from 'node:stream';
import { constants as zlib, createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';

/** Response content codings the proxy can undo before scrubbing (RFC 9110 §8.4.1). */
export const DECODABLE_CODINGS: readonly string[] = ['gzip', 'x-gzip', 'deflate', 'br'];

/**
 * Marks a body that did not decode as its Content-Encoding said. A plain Error, not an AppError:
 * it never leaves the stream pipeline; its reader (daemon/host/egress-upstream.ts, the proxy) answers
 * ERR_PROXY_UPSTREAM_ENCODING.
 */
export class DecodeError extends Error {
  constructor(cause: unknown) {
    super('upstream body does not match its content-encoding', { cause });
    this.name = 'DecodeError';
  }
}

/**
 * The codings a Content-Encoding header lists, in the order the upstream applied them,
 * lower-cased, without `identity`. Repeated headers count as one list.
 */
export function contentCodings(header: string | string[] | undefined): string[] {
  const list = Array.isArray(header) ? header.join(',') : (header ?? '');
  return list
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
}

// Sync flush: every input chunk yields all the output it can at once, so a compressed event
// stream (a model's SSE) is not held back by the decoder.
function decoderFor(coding: string): Transform {
  switch (coding) {
    case 'gzip':
    case 'x-gzip':
      return createGunzip({ flush: zlib.Z_SYNC_FLUSH });
    case 'deflate':
      // RFC 9110 "deflate" is the zlib format; a raw deflate body fails to decode (fail closed).
      return createInflate({ flush: zlib.Z_SYNC_FLUSH });
    case 'br':
      return createBrotliDecompress({ flush: zlib.BROTLI_OPERATION_FLUSH });
    default:
      throw new Error(`no decoder for ${coding}`);
  }
}

/**
 * The decoded body of `source`, whose Content-Encoding listed `codings` (all of them in
 * DECODABLE_CODINGS; the caller refuses others). Streaming, with back-pressure; the decoders
 * are made on the first byte, so an empty body (204, 304, Content-Length: 0) stays empty.
 * A body that does not decode ends the returned stream with a DecodeError.
 */
export function decodeBody(source: Readable, codings: readonly string[]): Readable {
  if (codings.length === 0) return source;
  const out = new PassThrough();
  let first: Transform | undefined;
  source.on('data', (d: Buffer) => {
    if (out.destroyed) return;
    if (!first) {
      // Undo the last-applied coding first.
      const chain = [...codings].reverse().map(decoderFor);
      for (const s of chain) s.on('error', (err) => out.destroy(new DecodeError(err)));
      chain
        .slice(1)
        .reduce<Readable>((from, to) => from.pipe(to), chain[0])
        .pipe(out);
      first = chain[0];
    }
    if (!first.write(d)) {
      source.pause();
      first.once('drain', () => source.resume());
    }
  });
  source.on('end', () => (first ? first.end() : out.end()));
  source.on('error', (err) => out.destroy(err));
  return out;
}
