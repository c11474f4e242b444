// A render_chart tool's chart in the chat, drawn with chart.js (loaded by the page as window.Chart)
// in the theme's colours, drawn again when the theme changes (docs/chat.md "Answers").
import { useEffect, useRef, useState } from 'preact/hooks';

/** A chart.js configuration as a render_chart tool returns it. */
export interface ChartSpec {
  type: string;
  data: unknown;
  options?: { plugins?: { title?: { text?: string } } } & Record<string, unknown>;
}

/** The chart in a tool's output (under `chart` or `spec`, or the short form with labels and datasets), or null. */
export function findChartSpec(o: unknown): ChartSpec | null {
  if (!o || typeof o !== 'object') return null;
  const x = o as Record<string, unknown>;
  if (x.chart && typeof x.chart === 'object') return findChartSpec(x.chart);
  if (x.spec && typeof x.spec === 'object') return findChartSpec(x.spec);
  if (typeof x.type === 'string' && x.data) return x as unknown as ChartSpec;
  if (typeof x.type === 'string' && (x.labels || x.datasets))
    return {
      type: x.type,
      data: { labels: x.labels, datasets: x.datasets },
      options: { plugins: { title: { display: !!x.title, text: x.title } } } as ChartSpec['options'],
    };
  return null;
}

declare global {
  interface Window {
    Chart?: (new (canvas: HTMLCanvasElement, cfg: unknown) => { destroy(): void }) & {
      defaults?: { color?: string; scale?: { grid?: { color?: unknown } } };
    };
  }
}

/** The page's text colour, which changes with the theme (Dark mode button or the system's): charts are drawn again then. */
function useInk(): string {
  const read = () => getComputedStyle(document.documentElement).getPropertyValue('--ink').trim();
  const [ink, setInk] = useState(read);
  useEffect(() => {
    const update = () => setInk(read());
    const mo = new MutationObserver(update);
    mo.observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] });
    const mq = matchMedia('(prefers-color-scheme: dark)');
    mq.addEventListener('change', update);
    return () => (mo.disconnect(), mq.removeEventListener('change', update));
  }, []);
  return ink;
}

/** The chart drawn on a canvas, in the theme's colours. */
export function ChartBox({ spec }: { spec: ChartSpec }) {
  const ref = useRef<HTMLCanvasElement>(null);
  const ink = useInk();
  useEffect(() => {
    if (!ref.current || !window.Chart) return;
    // Labels, legend and grid in the theme's colours (charts stayed light in dark mode: issue 41).
    // Not defaults.borderColor: a changed one turns off chart.js's automatic dataset colours.
    const defaults = window.Chart.defaults;
    if (defaults) {
      defaults.color = ink;
      if (defaults.scale?.grid)
        defaults.scale.grid.color = getComputedStyle(ref.current).getPropertyValue('--line').trim();
    }
    // chart.js writes defaults (colours) into the config it gets: hand it a copy, so the tool's
    // output shown in the row stays what the tool returned.
    const copy = JSON.parse(JSON.stringify(spec)) as ChartSpec;
    const chart = new window.Chart(ref.current, {
      ...copy,
      options: { responsive: true, animation: false, ...(copy.options ?? {}) },
    });
    return () => chart.destroy();
  }, [spec, ink]);
  return (
    <div class="chart-box" data-chart="render_chart">
      <canvas
        ref={ref}
        role="img"
        aria-label={String(spec.options?.plugins?.title?.text ?? 'chart')}
        width={600}
        height={300}
      />
    </div>
  );
}
