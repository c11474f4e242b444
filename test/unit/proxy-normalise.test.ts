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
  const denied = [
    'http://x/a',
    '*',
    '/a//b',
    '/a/../b',
    '/a/./b',
    '/a/..',
    '/%2e%2e/a',
    '/a%2E',
    '/a%252f',
    '/a%25',
    '/a%00',
    '/a%0a',
    '/a?x=%00',
    '/a?x=%7F',
    '/' + 'a'.repeat(5000),
    // an encoded separator whose decoded segment holds a dot segment
    '/a/..%2Fb',
    '/a/x%2F..',
    '/a/.%2Fb',
    '/a/..%5Cb',
    '/a/x%5c..%5cy',
    '/a/%2F..%2F',
  ];
  for (const d of denied)
    t.equal(
      code(() => parseTarget(d)),
      'ERR_PROXY_ROUTE_DENIED',
      d.slice(0, 40),
    );
  const bad = [
    '/%aa',
    '/%c3',
    '/a b',
    '/a\\b',
    '/a;b',
    '/a#b',
    '/a%zz',
    '/a%2',
    '/é',
    '/a?b c',
    '/a"b',
    '/a<b>',
    '/a?x=%zz',
    '/a?x=%2',
  ];
  for (const d of bad)
    t.equal(
      code(() => parseTarget(d)),
      'ERR_PROXY_BAD_REQUEST',
      d,
    );
});

t.test('the query is not matched: %25 passes there, as URLSearchParams writes it', async (t) => {
  const qs = new URLSearchParams({ q: "name contains '50%' and x = 'a/b'", pageSize: '20' }).toString();
  t.match(qs, /%25/);
  const ok = parseTarget(`/search/drive/v3/files?${qs}`);
  t.equal(ok.query, qs, 'forwarded exactly as received');
  t.same(ok.queryKeys, ['q', 'pageSize']);
});

t.test('an encoded slash or backslash fills only an opaque parameter', async (t) => {
  const tpl = '/sheets/v4/spreadsheets/{spreadsheetId}/values/{range}';
  const range = (r: string) => `/sheets/v4/spreadsheets/abc/values/${encodeURIComponent(r)}`;
  for (const r of ['a/b!A1:B2', "'a/b'!A1:B2", 'x\\y!A:C', '1/2/2026', 'a..b/c!A1']) {
    const path = parseTarget(range(r)).path;
    t.ok(matchTemplate(tpl, path, ['range']), `${r}: allowed in the opaque range`);
    t.notOk(matchTemplate(tpl, path), `${r}: refused when the parameter is not declared opaque`);
    t.equal(decodeURIComponent(path.split('/').pop()!), r, 'the segment decodes to the range');
  }
  t.notOk(matchTemplate(tpl, '/sheets/v4/spreadsheets/a%2Fb/values/A1', ['range']), 'not in another parameter');
  t.notOk(matchTemplate('/host/api/agent/memories/{id}', '/host/api/agent/memories/1%2F2'), 'nor in a plain {id}');
  t.notOk(matchTemplate(tpl, '/sheets/v4%2Fspreadsheets/abc/values/A1', ['range']), 'nor in a literal');
  t.notOk(
    matchTemplate('/search/drive/v3/files', '/search/drive%2Fv3/files', ['range']),
    'an encoded slash never joins two literals',
  );
  t.equal(
    code(() => parseTarget(range('../../../search/drive/v3/files'))),
    'ERR_PROXY_ROUTE_DENIED',
    'a traversal hidden in the range is refused',
  );
  t.equal(
    code(() => parseTarget(range('50%!A1'))),
    'ERR_PROXY_ROUTE_DENIED',
    '%25 stays refused in the path, opaque or not',
  );
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
      // Even for an upstream that decodes %2F and %5C before routing: no dot part anywhere.
      const decoded = decodeURIComponent(accepted);
      const parts2 = decoded.split(/[/\\]/);
      if (parts2.some((s) => s === '.' || s === '..')) return false;
      const segs = accepted.split('/');
      if (segs.slice(1, -1).includes('')) return false;
      // Without an encoded separator the path decodes to itself (but for %41).
      return /%(2f|5c)/i.test(accepted) || decoded === accepted.replace(/%41/g, 'A');
    }),
    { numRuns: 3000 },
  );
  t.pass(
    'no accepted path decodes to a dot or dot-dot part, an inner empty segment, or anything but itself without %2F/%5C',
  );
});

t.test('property: a matched path holds encoded separators only in the opaque segment', async (t) => {
  const tpl = '/r/{id}/v/{range}';
  const alphabet = ['a', '.', '/', '%2e', '%2f', '%2F', '%5c', '%25', '!', ':', 'v', 'r'];
  const piece = fc.array(fc.constantFrom(...alphabet), { maxLength: 6 }).map((p) => p.join(''));
  fc.assert(
    fc.property(piece, piece, (id, range) => {
      const target = `/r/${id}/v/${range}`;
      let path: string;
      try {
        path = parseTarget(target).path;
      } catch {
        return true;
      }
      if (!matchTemplate(tpl, path, ['range'])) return true;
      const segs = path.split('/');
      return (
        segs.length === 5 &&
        segs[1] === 'r' &&
        segs[3] === 'v' &&
        !/%(2f|5c)/i.test(segs[2]) &&
        decodeURIComponent(segs[4])
          .split(/[/\\]/)
          .every((p) => p !== '.' && p !== '..')
      );
    }),
    { numRuns: 3000 },
  );
  t.pass('literals stay literal, the plain parameter holds no encoded separator, the opaque one no dot part');
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
    fc.property(
      fc.array(fc.oneof(fc.constant(token), fc.string({ maxLength: 20 })), { maxLength: 8 }),
      fc.array(fc.integer({ min: 1, max: 50 }), { minLength: 1, maxLength: 10 }),
      (pieces, cuts) => {
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
      },
    ),
    { numRuns: 2000 },
  );
  t.equal(scrubString(`Bearer ${token}`, token), `Bearer ${SCRUBBED}`);
  t.equal(scrubString('x', ''), 'x');
});
