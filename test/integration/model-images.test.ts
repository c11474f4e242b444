/**
 * Images to a model that takes image input (docs/chat.md "Images"; agent/images.ts): the PNG and
 * JPEG uploads a message's "Attached:" line names are read from the uploads folder and go through
 * the official SDKs (the adapters) to scripted servers that check what the real APIs check
 * (emulator/model-wire.ts: base64 of the image type named): OpenAI Chat Completions image_url
 * parts with a data URL, Anthropic Messages base64 image blocks. One left out (not what its name
 * says, too large, a link, gone, over the per-request count) is named in a note the model reads.
 */
import t from 'tap';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createCanvas } from '@napi-rs/canvas';
import { start as startOpenAi } from '../../emulator/model-openai.js';
import { start as startAnthropic } from '../../emulator/model-anthropic.js';
import { OpenAiModel } from '../../agent/models/openai.js';
import { AnthropicModel } from '../../agent/models/anthropic.js';
import { DEFAULT_BOUNDS } from '../../agent/models/sdk.js';
import { IMAGE_MAX_BYTES, IMAGES_PER_REQUEST, imageNames, loadImages, type ImageCache } from '../../agent/images.js';
import type { Message } from '../../agent/types.js';
import { tempDir } from '../helpers/app.js';
import { PNG_1PX } from '../helpers/xlsx.js';

const signal = new AbortController().signal;

async function uploadsDir(t: Parameters<typeof tempDir>[0]) {
  const dir = join(tempDir(t, 'airlock-images-'), 'uploads');
  mkdirSync(dir);
  const canvas = createCanvas(8, 6);
  const g = canvas.getContext('2d');
  g.fillStyle = '#c00';
  g.fillRect(0, 0, 8, 6);
  const jpeg = await canvas.encode('jpeg');
  writeFileSync(join(dir, 'photo.png'), PNG_1PX);
  writeFileSync(join(dir, 'scan.jpg'), jpeg);
  writeFileSync(join(dir, 'fake.png'), 'not a picture');
  writeFileSync(join(dir, 'huge.png'), Buffer.concat([PNG_1PX, Buffer.alloc(IMAGE_MAX_BYTES)]));
  symlinkSync('/etc/hostname', join(dir, 'link.png'));
  return { dir, jpeg };
}

const ASKED =
  'What is in these?\n\nAttached: uploads/photo.png, uploads/scan.jpg, uploads/data.csv, uploads/fake.png, uploads/huge.png, uploads/link.png, uploads/gone.png';

t.test('the names on the Attached line: PNG and JPEG only, plain names only', async (t) => {
  t.same(imageNames(ASKED), ['photo.png', 'scan.jpg', 'fake.png', 'huge.png', 'link.png', 'gone.png']);
  t.same(imageNames('no files here'), []);
  t.same(imageNames('look at uploads/photo.png'), [], 'only the page-made Attached line counts');
  t.same(imageNames('x\n\nAttached: uploads/../etc.png'), [], 'no path in a name');
});

t.test("a turn's steps read an image once, and a changed file again", async (t) => {
  const { dir, jpeg } = await uploadsDir(t);
  const messages: Message[] = [{ role: 'user', content: ASKED }];
  const cache: ImageCache = new Map();
  const first = (await loadImages(messages, dir, IMAGES_PER_REQUEST, cache)).get(messages[0])!;
  const again = (await loadImages(messages, dir, IMAGES_PER_REQUEST, cache)).get(messages[0])!;
  t.equal(
    again.parts[0],
    first.parts[0],
    'the next step gets the part read at the first (the same object: not read or encoded again)',
  );
  t.same(again.notes, first.notes, 'the files left out are named again');
  // The user's file is replaced between two steps (another upload under the same name).
  writeFileSync(join(dir, 'photo.png'), jpeg);
  const changed = (await loadImages(messages, dir, IMAGES_PER_REQUEST, cache)).get(messages[0])!;
  t.not(changed.parts[0], first.parts[0]);
  t.same(
    changed.notes.filter((n) => n.includes('uploads/photo.png')),
    ['[The image uploads/photo.png was not sent to you: it is not a PNG file.]'],
    'a changed file is read again and checked again',
  );
  t.equal(changed.parts[0]?.name, 'uploads/scan.jpg');
});

t.test('OpenAI and Anthropic: image parts in each API shape; the ones left out named', async (t) => {
  const { dir, jpeg } = await uploadsDir(t);
  const messages: Message[] = [{ role: 'user', content: ASKED }];
  const images = await loadImages(messages, dir);
  const got = images.get(messages[0])!;
  t.same(
    got.parts.map((p) => [p.name, p.mediaType]),
    [
      ['uploads/photo.png', 'image/png'],
      ['uploads/scan.jpg', 'image/jpeg'],
    ],
  );
  t.match(got.notes.join('\n'), /uploads\/fake\.png was not sent to you: it is not a PNG file/);
  t.match(got.notes.join('\n'), /uploads\/huge\.png was not sent to you: it is larger than 3\.75 MB/);
  t.match(got.notes.join('\n'), /uploads\/link\.png was not sent to you: it is a link/);
  t.match(got.notes.join('\n'), /uploads\/gone\.png was not sent to you: it is no longer in the workspace/);

  const oa = await startOpenAi({ apiKey: 'k' });
  t.teardown(() => oa.close());
  oa.push({ kind: 'reply', text: 'A red square and a dot.' });
  const openai = new OpenAiModel({ baseUrl: oa.url, model: 'gpt-x', apiKey: 'k', bounds: DEFAULT_BOUNDS });
  t.equal(
    (await openai.complete({ system: 's', messages, tools: [], signal, images }, () => undefined)).text,
    'A red square and a dot.',
  );
  const user = oa.requests[0].body.messages[1];
  t.equal(user.role, 'user');
  t.match(user.content[0], { type: 'text', text: /^What is in these\?[\s\S]*uploads\/fake\.png was not sent/ });
  t.same(user.content.slice(1), [
    { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_1PX.toString('base64')}` } },
    { type: 'image_url', image_url: { url: `data:image/jpeg;base64,${jpeg.toString('base64')}` } },
  ]);

  const an = await startAnthropic({ apiKey: 'k' });
  t.teardown(() => an.close());
  an.push({ kind: 'reply', text: 'A red square and a dot.' });
  const anthropic = new AnthropicModel({ baseUrl: an.url, model: 'claude-x', apiKey: 'k', bounds: DEFAULT_BOUNDS });
  t.equal(
    (await anthropic.complete({ system: 's', messages, tools: [], signal, images }, () => undefined)).text,
    'A red square and a dot.',
  );
  const blocks = an.requests[0].body.messages[0].content;
  t.same(blocks.slice(0, 2), [
    { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_1PX.toString('base64') } },
    { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: jpeg.toString('base64') } },
  ]);
  t.match(blocks[2], { type: 'text', text: /^What is in these\?[\s\S]*uploads\/huge\.png was not sent/ });

  // Without images (a model that takes none) the message is the plain string it always was.
  oa.push({ kind: 'reply', text: 'ok' });
  await openai.complete({ system: 's', messages, tools: [], signal }, () => undefined);
  t.equal(oa.requests[1].body.messages[1].content, ASKED);
});

t.test('the scripted servers refuse what the APIs refuse: an image that is not its media type', async (t) => {
  const messages: Message[] = [{ role: 'user', content: 'look' }];
  const bad = new Map([
    [
      messages[0],
      {
        parts: [
          {
            name: 'uploads/x.png',
            mediaType: 'image/png' as const,
            data: Buffer.from('plain text').toString('base64'),
          },
        ],
        notes: [],
      },
    ],
  ]);
  const oa = await startOpenAi({ apiKey: 'k' });
  t.teardown(() => oa.close());
  const openai = new OpenAiModel({
    baseUrl: oa.url,
    model: 'gpt-x',
    apiKey: 'k',
    bounds: { ...DEFAULT_BOUNDS, retries: 0 },
  });
  await t.rejects(
    openai.complete({ system: 's', messages, tools: [], signal, images: bad }, () => undefined),
    { code: 'ERR_MODEL_HTTP' },
  );
  const an = await startAnthropic({ apiKey: 'k' });
  t.teardown(() => an.close());
  const anthropic = new AnthropicModel({
    baseUrl: an.url,
    model: 'claude-x',
    apiKey: 'k',
    bounds: { ...DEFAULT_BOUNDS, retries: 0 },
  });
  await t.rejects(
    anthropic.complete({ system: 's', messages, tools: [], signal, images: bad }, () => undefined),
    { code: 'ERR_MODEL_HTTP' },
  );
});

t.test(`at most ${IMAGES_PER_REQUEST} images per request, the newest messages' first`, async (t) => {
  const { dir } = await uploadsDir(t);
  for (let i = 0; i < 10; i++) writeFileSync(join(dir, `p${i}.png`), PNG_1PX);
  const messages: Message[] = [];
  for (let i = 0; i < 10; i++) {
    messages.push({ role: 'user', content: `picture ${i}\n\nAttached: uploads/p${i}.png` });
    messages.push({ role: 'assistant', text: 'seen', toolCalls: [] });
  }
  const images = await loadImages(messages, dir);
  const sent = messages
    .filter((m) => images.get(m)?.parts.length)
    .map((m) => (m as { content: string }).content.split('\n')[0]);
  t.same(sent, [
    'picture 2',
    'picture 3',
    'picture 4',
    'picture 5',
    'picture 6',
    'picture 7',
    'picture 8',
    'picture 9',
  ]);
  t.match(
    images.get(messages[0])!.notes[0],
    /uploads\/p0\.png was not sent to you: at most 8 images go with one request/,
  );
});
