import { randomUUID } from 'node:crypto';
import { existsSync, promises as fs } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChartConfiguration, Plugin } from 'chart.js';
import type { ChartSpec } from './chart-spec.js';
import { runtimeImport } from '../core/runtime-import.js';

/** The family name charts are drawn in; registered from the bundled DejaVu Sans files. */
export const CHART_FONT_FAMILY = 'Airlock Sans';

const PALETTE = [
  '#4e79a7',
  '#f28e2b',
  '#e15759',
  '#76b7b2',
  '#59a14f',
  '#edc948',
  '#b07aa1',
  '#ff9da7',
  '#9c755f',
  '#bab0ac',
];

const here = dirname(fileURLToPath(import.meta.url));

/**
 * Where the bundled fonts are: extensions/fonts/ next to the sources (repo root, and the image,
 * which copies extensions/fonts/ beside dist/), or dist/extensions/fonts/ if copied there.
 */
export function fontDirCandidates(): string[] {
  return [join(here, 'fonts'), join(here, '..', '..', 'extensions', 'fonts')];
}

let fontDir: string | undefined;

/**
 * Check that the bundled font is there (at start, so a missing file fails the server loudly:
 * without a font @napi-rs/canvas draws NO text and reports no error). Registering it waits
 * for the first chart, with the canvas itself (chartLibs).
 */
export function ensureChartFonts(dir?: string): void {
  if (fontDir) return;
  const found = dir ? [dir] : fontDirCandidates().filter((d) => existsSync(join(d, 'DejaVuSans.ttf')));
  if (!found.length || !existsSync(join(found[0], 'DejaVuSans.ttf'))) {
    throw new Error(`chart font DejaVuSans.ttf not found (looked in ${fontDirCandidates().join(', ')})`);
  }
  fontDir = found[0];
}

interface ChartLibs {
  createCanvas: typeof import('@napi-rs/canvas').createCanvas;
  Chart: typeof import('chart.js').Chart;
}
let libs: Promise<ChartLibs> | undefined;

/**
 * The canvas (a native library) and Chart.js, loaded on the first chart rather than at start:
 * most sessions draw none, and an idle extensions server is then much smaller (docs/runtime.md#density).
 */
function chartLibs(): Promise<ChartLibs> {
  libs ??= (async () => {
    ensureChartFonts();
    const [{ createCanvas, GlobalFonts }, { Chart, registerables }] = await Promise.all([
      runtimeImport<typeof import('@napi-rs/canvas')>('@napi-rs/canvas'),
      import('chart.js'),
    ]);
    Chart.register(...registerables);
    for (const file of ['DejaVuSans.ttf', 'DejaVuSans-Bold.ttf']) {
      const p = join(fontDir!, file);
      if (existsSync(p) && !GlobalFonts.registerFromPath(p, CHART_FONT_FAMILY))
        throw new Error(`cannot register font ${p}`);
    }
    Chart.defaults.font.family = CHART_FONT_FAMILY;
    Chart.defaults.color = '#333333';
    return { createCanvas, Chart };
  })();
  libs.catch(() => {
    libs = undefined; // a failed load is tried again on the next chart
  });
  return libs;
}

const whiteBackground: Plugin = {
  id: 'airlockBackground',
  beforeDraw(chart) {
    const ctx = chart.ctx;
    ctx.save();
    ctx.globalCompositeOperation = 'destination-over';
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, chart.width, chart.height);
    ctx.restore();
  },
};

function colourFor(i: number): string {
  return PALETTE[i % PALETTE.length];
}

/** Map our chart arguments to a Chart.js configuration. */
export function toChartJs(spec: ChartSpec): ChartConfiguration {
  const round = spec.type === 'pie' || spec.type === 'doughnut';
  const datasets = spec.datasets.map((d, i) => {
    const fill = d.color ?? (round ? d.data.map((_, j) => colourFor(j)) : colourFor(i));
    return {
      label: d.label,
      data: d.data,
      backgroundColor: fill,
      borderColor: d.border_color ?? (round ? '#ffffff' : Array.isArray(fill) ? fill : fill),
      borderWidth: spec.type === 'line' ? 2 : 1,
      pointRadius: spec.type === 'scatter' ? 4 : spec.type === 'line' ? 2 : undefined,
    };
  });
  // Only set keys that were given: an explicit `type: undefined` turns a category axis linear.
  const axis = (a: ChartSpec['x_axis'], xy: 'x' | 'y') => {
    const o: Record<string, unknown> = { beginAtZero: a?.begin_at_zero ?? (xy === 'y' && spec.type !== 'scatter') };
    if (a?.logarithmic) o.type = 'logarithmic';
    if (a?.title) o.title = { display: true, text: a.title };
    if (a?.min !== undefined) o.min = a.min;
    if (a?.max !== undefined) o.max = a.max;
    if (a?.stacked !== undefined) o.stacked = a.stacked;
    return o;
  };
  const showLegend = spec.legend ?? (round || spec.datasets.some((d) => !!d.label));
  return {
    type: spec.type,
    data: { labels: spec.labels, datasets },
    options: {
      responsive: false,
      animation: false,
      devicePixelRatio: 1,
      indexAxis: spec.type === 'bar' && spec.horizontal ? 'y' : 'x',
      plugins: {
        title: spec.title
          ? { display: true, text: spec.title, font: { size: 18, weight: 'bold' }, padding: { top: 8, bottom: 12 } }
          : { display: false },
        legend: { display: showLegend, position: 'bottom' },
        tooltip: { enabled: false },
      },
      scales: round ? {} : { x: axis(spec.x_axis, 'x'), y: axis(spec.y_axis, 'y') },
    },
    plugins: [whiteBackground],
  } as ChartConfiguration;
}

/** Render a chart to PNG bytes. */
export async function renderChartPng(spec: ChartSpec): Promise<Buffer> {
  const { createCanvas, Chart } = await chartLibs();
  const canvas = createCanvas(spec.width, spec.height);
  const chart = new Chart(canvas as unknown as HTMLCanvasElement, toChartJs(spec));
  try {
    return await canvas.encode('png');
  } finally {
    chart.destroy();
  }
}

export interface ChartAttachment {
  type: 'chart_attachment';
  /** `<uuid>.png`: pass unchanged to send_email. */
  filename: string;
  width: number;
  height: number;
}

/**
 * Render and write `<uuid>.png` into the attachments folder (created 0700 if missing;
 * the file is created exclusively, 0600, so nothing existing is overwritten or followed), and
 * the chart's title, if any, as `<uuid>.title` beside it.
 */
export async function rasterizeChart(spec: ChartSpec, attachmentsDir: string): Promise<ChartAttachment> {
  const png = await renderChartPng(spec);
  await fs.mkdir(attachmentsDir, { recursive: true, mode: 0o700 });
  const filename = `${randomUUID()}.png`;
  await fs.writeFile(join(attachmentsDir, filename), png, { flag: 'wx', mode: 0o600 });
  // The chart's title beside it: send_email names the attachment after it (tools/attachments.ts chartFileName).
  if (spec.title)
    await fs.writeFile(join(attachmentsDir, filename.replace(/\.png$/, '.title')), spec.title.slice(0, 200), {
      flag: 'wx',
      mode: 0o600,
    });
  return { type: 'chart_attachment', filename, width: spec.width, height: spec.height };
}
