import t from 'tap';
import { PassThrough } from 'node:stream';
import { brotliCompressSync, constants as zc, createGzip, gzipSync } from 'node:zlib';
import { contentCodings, decodeBody, DecodeError } from '../../proxy/index.js';

const collect = (s: NodeJS.ReadableStream) =>
  new Promise<{ text: string; err?: unknown }>((resolve) => {
    let text = '';
    s.on('data', (d: Buffer) => (text += d.toString()));
    s.on('end', () => resolve({ text }));
    s.on('error', (err) => resolve({ text, err }));
  });

t.test('contentCodings: the listed codings in applied order, identity dropped', async (t) => {
  t.same(contentCodings(undefined), []);
  t.same(contentCodings('identity'), []);
  t.same(contentCodings(' GZip '), ['gzip']);
  t.same(contentCodings('deflate, gzip'), ['deflate', 'gzip']);
  t.same(contentCodings(['br', 'identity, x-gzip']), ['br', 'x-gzip']);
  t.same(contentCodings('zstd'), ['zstd']);
});

t.test('decodeBody undoes gzip, br and stacked codings; no codings is the source itself', async (t) => {
  const plain = 'hello ' + 'x'.repeat(5000);
  for (const [codings, bytes] of [
    [['gzip'], gzipSync(plain)],
    [['br'], brotliCompressSync(plain)],
    [['br', 'gzip'], gzipSync(brotliCompressSync(plain))],
  ] as const) {
    const src = new PassThrough();
    const out = decodeBody(src, codings);
    for (let i = 0; i < bytes.length; i += 5) src.write(bytes.subarray(i, i + 5));
    src.end();
    t.equal((await collect(out)).text, plain, codings.join(','));
  }
  const src = new PassThrough();
  t.equal(decodeBody(src, []), src);
});

t.test('decodeBody: an empty body stays empty; a lying body ends in DecodeError', async (t) => {
  const empty = new PassThrough();
  const out = decodeBody(empty, ['gzip']);
  empty.end();
  t.same(await collect(out), { text: '' });
  const lie = new PassThrough();
  const bad = decodeBody(lie, ['gzip']);
  lie.end('plain text, not gzip');
  const r = await collect(bad);
  t.equal(r.text, '', 'nothing undecoded comes out');
  t.ok(r.err instanceof DecodeError);
});

t.test('decodeBody: a flushed event comes out before the compressed stream goes on', async (t) => {
  const src = new PassThrough();
  const out = decodeBody(src, ['gzip']);
  const z = createGzip();
  z.on('data', (d: Buffer) => src.write(d));
  z.write('data: {"delta":"Thinking"}\n\n');
  const first = new Promise<string>((resolve) => out.once('data', (d: Buffer) => resolve(d.toString())));
  z.flush(zc.Z_SYNC_FLUSH);
  t.equal(await first, 'data: {"delta":"Thinking"}\n\n', 'a paused stream is not held back');
  z.end();
  await new Promise((r) => z.once('end', r));
  src.end();
});
