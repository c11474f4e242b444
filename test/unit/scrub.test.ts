import t from 'tap';
import { Scrubber, SCRUBBED } from '../../core/egress/scrub.js';

t.test('streamed text that cannot start the token passes at once', async (t) => {
  const s = new Scrubber('ya29.secret-token');
  t.equal(s.push(Buffer.from('data: {"delta":"Thinking"}\n\n')).toString(), 'data: {"delta":"Thinking"}\n\n', 'nothing held back');
  t.equal(s.push(Buffer.from('abc y')).toString(), 'abc ', 'only a possible token start is held');
  t.equal(s.push(Buffer.from('a29.secret-token!')).toString(), `${SCRUBBED}!`, 'a token split across chunks is still replaced');
  t.equal(s.end().toString(), '');
});
