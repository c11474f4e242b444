import t from 'tap';
import fc from 'fast-check';
import { matchTemplate, parseTarget, Scrubber, SCRUBBED, scrubString } from '../../proxy/index.js';

const code = (f: () => unknown): string | undefined => {
  try {
    f();
    return undefined;
  } catch (err) {
    return (err as { code?: string }).code;
  }
};

t.test('parseTarget accepts canonical targets and reports query keys only', async (t) => {
  const ok = parseTarget("/sheets/v4/spreadsheets/abc/values/'My%20Sheet'!A1:B2?majorDimension=ROWS&x=%2F");
  t.equal(ok.path, "/sheets/v4/spreadsheets/abc/values/'My%20Sheet'!A1:B2");
  t.equal(ok.query, 'majorDimension=ROWS&x=%2F', 'encoded slash is fine in a query value');
  t.same(ok.queryKeys, ['majorDimension', 'x']);
  t.same(parseTarget('/a').queryKeys, []);
});

t.test('parseTarget refusals carry the right code', async (t) => {
  const denied = ['http://x/a', '*', '/a//b', '/a/../b', '/a/./b', '/a/..', '/a%2fb', '/a%2Fb', '/a%5cb', '/%2e%2e/a', '/a%252f', '/a%00', '/a%0a', '/' + 'a'.repeat(5000)];
  for (const d of denied) t.equal(code(() => parseTarget(d)), 'ERR_PROXY_ROUTE_DENIED', d.slice(0, 40));
  const bad = ['/%aa', '/%c3', '/a b', '/a\\b', '/a;b', '/a#b', '/a%zz', '/a%2', '/é', '/a?b c', '/a"b', '/a<b>', '/a?x=%zz'];
  for (const d of bad) t.equal(code(() => parseTarget(d)), 'ERR_PROXY_BAD_REQUEST', d);
});

t.test('property: an accepted path never decodes to a traversal', async (t) => {
  const alphabet = ['a', 'b', '.', '/', '%2e', '%2f', '%5c', '%25', '%41', '\\', ';', ':', '!', '%'];
  fc.assert(
    fc.property(fc.array(fc.constantFrom(...alphabet), { maxLength: 12 }), (parts) => {
      const target = '/' + parts.join('');
      let accepted: string | undefined;
      try {
        accepted = parseTarget(target).path;
      } catch {
        return true;
      }
      const decoded = decodeURIComponent(accepted);
      const segs = decoded.split('/');
      return !segs.some((s) => s === '.' || s === '..') && !segs.slice(1, -1).includes('') && !decoded.includes('\\') && decoded === accepted.replace(/%41/g, 'A');
    }),
    { numRuns: 3000 },
  );
  t.pass('no accepted path decodes to a dot or dot-dot segment, an inner empty segment or a backslash');
});

t.test('matchTemplate: one non-empty segment per parameter, literals exact', async (t) => {
  const tpl = '/sheets/v4/spreadsheets/{spreadsheetId}/values/{range}';
  t.ok(matchTemplate(tpl, '/sheets/v4/spreadsheets/abc/values/A1:B2'));
  t.notOk(matchTemplate(tpl, '/sheets/v4/spreadsheets/abc/values/A1/x'));
  t.notOk(matchTemplate(tpl, '/sheets/v4/spreadsheets//values/A1'));
  t.notOk(matchTemplate(tpl, '/sheets/v4/Spreadsheets/abc/values/A1'));
  t.notOk(matchTemplate(tpl, '/sheets/v4/spreadsheets/abc/values'));
});

t.test('Scrubber finds the token across any chunking', async (t) => {
  const token = 'ya29.secret-token-ABCDEF0123456789';
  fc.assert(
    fc.property(fc.array(fc.oneof(fc.constant(token), fc.string({ maxLength: 20 })), { maxLength: 8 }), fc.array(fc.integer({ min: 1, max: 50 }), { minLength: 1, maxLength: 10 }), (pieces, cuts) => {
      const text = Buffer.from(pieces.join(''));
      const s = new Scrubber(token);
      const out: Buffer[] = [];
      let i = 0;
      let k = 0;
      while (i < text.length) {
        const n = cuts[k++ % cuts.length];
        out.push(s.push(text.subarray(i, i + n)));
        i += n;
      }
      out.push(s.end());
      const result = Buffer.concat(out).toString();
      return !result.includes(token) && result === text.toString().split(token).join(SCRUBBED);
    }),
    { numRuns: 2000 },
  );
  t.equal(scrubString(`Bearer ${token}`, token), `Bearer ${SCRUBBED}`);
  t.equal(scrubString('x', ''), 'x');
});
