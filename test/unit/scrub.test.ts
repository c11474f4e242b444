import t from 'tap';
import { Scrubber, SCRUBBED, scrubString } from '../../core/egress/scrub.js';

t.test('streamed text that cannot start the token passes at once', async (t) => {
  const s = new Scrubber('ya29.secret-token');
  t.equal(
    s.push(Buffer.from('data: {"delta":"Thinking"}\n\n')).toString(),
    'data: {"delta":"Thinking"}\n\n',
    'nothing held back',
  );
  t.equal(s.push(Buffer.from('abc y')).toString(), 'abc ', 'only a possible token start is held');
  t.equal(
    s.push(Buffer.from('a29.secret-token!')).toString(),
    `${SCRUBBED}!`,
    'a token split across chunks is still replaced',
  );
  t.equal(s.end().toString(), '');
});

t.test('a secret split at every boundary is replaced; near misses pass byte-exact', async (t) => {
  const secret = 'ya29.secret-token';
  const text = `data: yy${secret}${secret} ya29.secret-toke! y${secret.slice(0, 5)}x ${secret}y ya29.secret-tokenya`;
  const want = scrubString(text, secret);
  const bytes = Buffer.from(text);
  let cases = 0;
  for (let a = 0; a <= bytes.length; a++) {
    for (let b = a; b <= bytes.length; b += 3) {
      const s = new Scrubber(secret);
      const got = Buffer.concat([
        s.push(bytes.subarray(0, a)),
        s.push(bytes.subarray(a, b)),
        s.push(bytes.subarray(b)),
        s.end(),
      ]).toString();
      if (got !== want) t.fail(`split at ${a},${b}: ${got}`);
      cases++;
    }
  }
  const one = new Scrubber(secret);
  const parts = [...bytes].map((x) => one.push(Buffer.from([x])));
  t.equal(Buffer.concat([...parts, one.end()]).toString(), want, 'one byte at a time');
  t.equal(one.hits, 4);
  t.ok(cases > 1000, `${cases} splits, all replaced exactly`);
});

t.test('a chunk with nothing to replace or hold back is passed on without a copy', async (t) => {
  const s = new Scrubber('ya29.secret-token');
  const chunk = Buffer.from('data: {"delta":"plain text"}\n\n');
  const out = s.push(chunk);
  t.equal(out.buffer, chunk.buffer, 'the same memory');
  t.equal(out.byteOffset, chunk.byteOffset);
  t.equal(out.length, chunk.length);
  const held = Buffer.from('text y');
  const part = s.push(held);
  t.equal(part.buffer, held.buffer, 'the part before a possible start is a view too');
  t.equal(part.toString(), 'text ');
});
