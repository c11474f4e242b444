import type { IncomingMessage } from 'node:http';

/**
 * A request's body, at most `max` bytes. A declared length over it, or the first chunk past it,
 * rejects with `tooLarge()` at once; the rest of the stream is read and dropped, so nothing past
 * the cap is held and the connection can still carry the answer.
 */
export function readCappedBody(req: IncomingMessage, max: number, tooLarge: () => Error): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (declared > max) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let n = 0;
    req.on('data', (c: Buffer) => {
      n += c.length;
      if (n > max) {
        req.removeAllListeners('data');
        req.resume();
        reject(tooLarge());
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
