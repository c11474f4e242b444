import t from 'tap';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createCanvas, loadImage } from '@napi-rs/canvas';
import { chartArgs, normaliseChart, rasterizeChart, renderChartPng, type ChartArgs } from '../../extensions/index.js';
import { tempDir } from '../helpers/app.js';
import { errorCode, startMcp } from '../helpers/mcp.js';

async function pixels(png: Buffer): Promise<{ width: number; height: number; data: Uint8ClampedArray }> {
  const img = await loadImage(png);
  const c = createCanvas(img.width, img.height);
  const ctx = c.getContext('2d');
  ctx.drawImage(img, 0, 0);
  return { width: img.width, height: img.height, data: ctx.getImageData(0, 0, img.width, img.height).data };
}

/** Dark (title/tick text colour) pixels in a box. */
function darkIn(p: { width: number; data: Uint8ClampedArray }, x0: number, y0: number, x1: number, y1: number): number {
  let n = 0;
  for (let y = y0; y < y1; y++) {
    for (let x = x0; x < x1; x++) {
      const i = (y * p.width + x) * 4;
      if (p.data[i] < 110 && p.data[i + 1] < 110 && p.data[i + 2] < 110) n++;
    }
  }
  return n;
}

const BASE: ChartArgs = {
  type: 'bar',
  labels: ['Jan', 'Feb', 'Mar', 'Apr'],
  datasets: [{ data: [4, 9, 6, 12] }],
  legend: false,
  width: 800,
  height: 400,
};

t.test('rasterize_chart over MCP writes a valid PNG of the requested size', async (t) => {
  const dir = join(tempDir(t), 'att');
  const ext = await startMcp(t, 'extensions', { AGENT_ATTACHMENTS_DIR: dir });
  for (const [type, extra] of [
    ['bar', {}],
    ['line', {}],
    ['pie', {}],
    ['doughnut', {}],
    [
      'scatter',
      {
        labels: undefined,
        datasets: [
          {
            label: 'pts',
            data: [
              { x: 1, y: 2 },
              { x: 3, y: 1 },
            ],
          },
        ],
      },
    ],
  ] as const) {
    const r = await ext.call('rasterize_chart', {
      ...BASE,
      type,
      title: `A ${type} chart`,
      width: 640,
      height: 360,
      ...extra,
    });
    t.notOk(r.isError, `${type}: ${JSON.stringify(r.content)}`);
    const att = r.structuredContent as { filename: string; width: number; height: number };
    const png = readFileSync(join(dir, att.filename));
    t.ok(
      png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
      `${type}: PNG signature`,
    );
    t.equal(png.readUInt32BE(16), 640, `${type}: IHDR width`);
    t.equal(png.readUInt32BE(20), 360, `${type}: IHDR height`);
    const p = await pixels(png);
    const view = new Uint32Array(p.data.buffer, p.data.byteOffset, p.data.length / 4);
    t.ok(
      view.some((v) => v !== view[0]),
      `${type}: pixels are not all one colour`,
    );
  }
  const pngs = readdirSync(dir).filter((f) => f.endsWith('.png'));
  t.equal(pngs.length, 5, 'one PNG per chart');
  // Its title beside it, for the name send_email gives the attachment (tools/attachments.ts chartFileName).
  t.same(
    readdirSync(dir)
      .filter((f) => !f.endsWith('.png'))
      .sort(),
    pngs.map((f) => f.replace(/\.png$/, '.title')).sort(),
    'and its title file',
  );
  t.same(
    pngs.map((f) => readFileSync(join(dir, f.replace(/\.png$/, '.title')), 'utf8')).sort(),
    ['A bar chart', 'A doughnut chart', 'A line chart', 'A pie chart', 'A scatter chart'],
    'holding the title',
  );
  t.equal(statSync(dir).mode & 0o777, 0o700, 'attachments folder is private');
  const tooBig = await ext.call('rasterize_chart', { ...BASE, width: 5000 });
  t.ok(tooBig.isError, 'width over the limit refused');
  const xyOnBar = await ext.call('render_chart', { ...BASE, datasets: [{ data: [{ x: 1, y: 1 }] }] });
  t.ok(xyOnBar.isError, 'render_chart validates too');
  t.equal(errorCode({ isError: false, content: [] }), undefined);
  t.equal(readdirSync(dir).length, 10, 'refused calls write nothing; render_chart writes nothing');
});

t.test('the title is drawn with the bundled font (compared with a render without it)', async (t) => {
  const withTitle = await pixels(await renderChartPng(normaliseChart({ ...BASE, title: 'Quarterly revenue' })));
  const without = await pixels(await renderChartPng(normaliseChart(BASE)));
  t.same([withTitle.width, withTitle.height], [800, 400]);
  // The title band: top 30 px, middle half of the width (tick labels sit at the left edge).
  const band = (p: typeof withTitle) => darkIn(p, 200, 0, 600, 30);
  t.ok(band(withTitle) > 100, `title pixels drawn (${band(withTitle)})`);
  t.equal(band(without), 0, 'no dark pixels there without a title');
  const other = await pixels(await renderChartPng(normaliseChart({ ...BASE, title: 'WWWW MMMM' })));
  t.not(band(other), band(withTitle), 'different title text draws different glyphs');
  // Axis labels are text too: the left edge carries tick labels in both renders.
  t.ok(darkIn(without, 0, 0, 40, 400) > 20, 'tick labels drawn');
});

t.test('chart arguments are validated', async (t) => {
  t.ok(chartArgs.safeParse(BASE).success);
  const bad: unknown[] = [
    { ...BASE, type: 'radar' },
    { ...BASE, datasets: [] },
    { ...BASE, width: 99 },
    { ...BASE, height: 2001 },
    { ...BASE, datasets: [{ data: [1, 2, 3, 4, 5] }] },
    { ...BASE, datasets: [{ data: [1], color: 'url(javascript:x)' }] },
    { ...BASE, type: 'scatter', datasets: [{ data: [1, 2] }] },
    { ...BASE, datasets: [{ data: [Infinity] }] },
  ];
  for (const b of bad) t.notOk(chartArgs.safeParse(b).success, JSON.stringify(b).slice(0, 80));
  const dir = join(tempDir(t), 'nested', 'att');
  const att = await rasterizeChart(
    normaliseChart({
      type: 'doughnut',
      labels: ['a', 'b'],
      datasets: [{ data: [1, 1], color: ['#ff0000', 'rgb(0, 0, 255)'] }],
    }),
    dir,
  );
  t.same([att.width, att.height], [800, 400], 'default size');
});
