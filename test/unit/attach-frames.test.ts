import t from 'tap';
import { AttachFrameReader, encodeAttachFrame, MAX_ATTACH_FRAME, type AttachFrame } from '../../core/attach-frames.js';

const frames: AttachFrame[] = [
  { type: 'data', data: Buffer.from('ls -la\r') },
  { type: 'resize', rows: 37, cols: 101 },
  { type: 'data', data: Buffer.from([0x1b, 0x5b, 0x41, 0x00, 0xff]) },
  { type: 'eof' },
  { type: 'exit', code: 3 },
  { type: 'exit', code: -1 },
  { type: 'data', data: Buffer.alloc(0) },
];

t.test('frames survive any chunking of the stream', async (t) => {
  const wire = Buffer.concat(frames.map(encodeAttachFrame));
  for (const size of [1, 2, 3, 5, 7, 64, wire.length]) {
    const r = new AttachFrameReader();
    const got: AttachFrame[] = [];
    for (let i = 0; i < wire.length; i += size) got.push(...r.push(wire.subarray(i, i + size)));
    t.same(got, frames, `chunks of ${size} bytes`);
  }
});

t.test('a size outside 16 bits is clamped, not wrapped', async (t) => {
  const [f] = new AttachFrameReader().push(encodeAttachFrame({ type: 'resize', rows: 70_000, cols: -4 }));
  t.same(f, { type: 'resize', rows: 0xffff, cols: 0 });
});

t.test('bad frames are refused with a protocol error', async (t) => {
  const frame = (type: number, payload: Buffer) => {
    const head = Buffer.alloc(5);
    head[0] = type;
    head.writeUInt32BE(payload.length, 1);
    return Buffer.concat([head, payload]);
  };
  const cases: [string, Buffer, string][] = [
    ['unknown type', frame(0x71, Buffer.from('x')), 'ERR_PROTOCOL_BAD_MESSAGE'],
    ['resize of 3 bytes', frame(0x72, Buffer.from([0, 1, 2])), 'ERR_PROTOCOL_BAD_MESSAGE'],
    ['exit of 2 bytes', frame(0x78, Buffer.from([0, 1])), 'ERR_PROTOCOL_BAD_MESSAGE'],
    ['eof with a payload', frame(0x7a, Buffer.from([1])), 'ERR_PROTOCOL_BAD_MESSAGE'],
  ];
  for (const [what, bytes, code] of cases)
    t.throws(() => new AttachFrameReader().push(bytes), { code, status: 400 }, what);
  // An announced length over the limit is refused from its header alone (no buffering of it).
  const head = Buffer.from([0x64, 0, 0, 0, 0]);
  head.writeUInt32BE(MAX_ATTACH_FRAME + 1, 1);
  t.throws(() => new AttachFrameReader().push(head), { code: 'ERR_PROTOCOL_LINE_TOO_LONG' }, 'too long');
  t.same(new AttachFrameReader().push(Buffer.from([0x64, 0, 0])), [], 'half a header waits for the rest');
});
