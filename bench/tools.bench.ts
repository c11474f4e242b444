import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCanvas } from '@napi-rs/canvas';
import { ensureChartFonts, normaliseChart, rasterizeChart, renderChartPng } from '../extensions/index.js';
import { buildMessage } from '../tools/index.js';
import { nowMs, stats, type BenchResult } from './lib.js';

const N = 60;
const WARMUP = 5;

async function sample(n: number, fn: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < WARMUP; i++) await fn();
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const s = nowMs();
    await fn();
    out.push(nowMs() - s);
  }
  return out;
}

/**
 * rasterize_chart per 800×400 chart (render + PNG encode + file write) against a blank
 * 800×400 canvas encode; send_email's message build (MIME with one inline PNG, base64url)
 * against a plain-text message build. All in this process, same run.
 */
export async function run(): Promise<BenchResult> {
  ensureChartFonts();
  const dir = mkdtempSync(join(tmpdir(), 'airlock-bench-charts-'));
  try {
    const spec = normaliseChart({
      type: 'bar',
      title: 'Revenue by month',
      labels: ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'],
      datasets: [
        { label: '2025', data: [12, 19, 3, 5, 2, 3, 9, 11, 14, 7, 8, 10] },
        { label: '2026', data: [14, 15, 6, 8, 4, 6, 10, 12, 15, 9, 11, 13] },
      ],
      width: 800,
      height: 400,
    });
    const blank = await sample(N, async () => {
      const c = createCanvas(800, 400);
      const ctx = c.getContext('2d');
      ctx.fillStyle = '#ffffff';
      ctx.fillRect(0, 0, 800, 400);
      return c.encode('png');
    });
    const charts = await sample(N, () => rasterizeChart(spec, dir));
    const png = await renderChartPng(spec);
    const plain = await sample(N, async () =>
      (await buildMessage({ to: ['bob@example.test'], subject: 'Report', text: 'Numbers attached.' }, [])).toString(
        'base64url',
      ),
    );
    const withPng = await sample(N, async () =>
      (
        await buildMessage(
          {
            to: ['bob@example.test'],
            subject: 'Report',
            text: 'Numbers attached.',
            html: '<p>Numbers:</p><img src="cid:0b9e0a3e-4c1f-4b7e-9a51-0f3b5a8d2c11.png">',
          },
          [{ filename: '0b9e0a3e-4c1f-4b7e-9a51-0f3b5a8d2c11.png', content: png }],
        )
      ).toString('base64url'),
    );
    const b = stats(blank);
    const c = stats(charts);
    const p = stats(plain);
    const m = stats(withPng);
    return {
      name: 'tools',
      rows: [
        { what: 'baseline: blank 800x400 canvas + PNG encode', n: b.n, p50_ms: b.p50, p99_ms: b.p99 },
        {
          what: 'rasterize_chart 800x400 bar (render + encode + write)',
          n: c.n,
          p50_ms: c.p50,
          p99_ms: c.p99,
          png_bytes: png.length,
        },
        { what: 'baseline: plain-text message build + base64url', n: p.n, p50_ms: p.p50, p99_ms: p.p99 },
        { what: 'send_email build: HTML + inline PNG + base64url', n: m.n, p50_ms: m.p50, p99_ms: m.p99 },
      ],
      ratios: { chart_p50_vs_blank_encode: c.p50 / b.p50, inline_png_build_p50_vs_plain: m.p50 / p.p50 },
      notes: 'in-process (no MCP stdio hop); 2 shared cores, other helpers running',
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
