import { z } from 'zod';

/** Chart limits (pixels and data sizes): a chart fits an e-mail and renders in milliseconds. */
export const CHART_MIN_PX = 100;
export const CHART_MAX_PX = 2000;
export const CHART_DEFAULT_WIDTH = 800;
export const CHART_DEFAULT_HEIGHT = 400;
export const CHART_MAX_DATASETS = 20;
export const CHART_MAX_POINTS = 1000;
export const CHART_MAX_LABELS = 1000;

export const CHART_TYPES = ['bar', 'line', 'pie', 'doughnut', 'scatter'] as const;

// CSS colours: #rgb/#rrggbb/#rrggbbaa, rgb()/rgba()/hsl()/hsla() with plain numbers, or a name.
const colour = z
  .string()
  .max(64)
  .regex(
    /^(#[0-9a-fA-F]{3,8}|(rgb|rgba|hsl|hsla)\(\s*[0-9.%\s,/]+\)|[a-zA-Z]{3,20})$/,
    'a CSS colour (#hex, rgb(), hsl() or a name)',
  );

const point = z.object({ x: z.number().finite(), y: z.number().finite() });

const dataset = z.object({
  label: z.string().max(200).optional(),
  data: z.union([z.array(z.number().finite().nullable()).max(CHART_MAX_POINTS), z.array(point).max(CHART_MAX_POINTS)]),
  color: z
    .union([colour, z.array(colour).max(CHART_MAX_POINTS)])
    .optional()
    .describe('fill colour, or one per point (pie/doughnut)'),
  border_color: colour.optional(),
});

const axis = z.object({
  title: z.string().max(200).optional(),
  min: z.number().finite().optional(),
  max: z.number().finite().optional(),
  begin_at_zero: z.boolean().optional(),
  stacked: z.boolean().optional(),
  logarithmic: z.boolean().optional(),
});

/** The arguments of render_chart and rasterize_chart (one shape: docs/rules.md#agent-tools, "same chart arguments"). */
export const chartArgsShape = {
  type: z.enum(CHART_TYPES),
  title: z.string().max(200).optional(),
  labels: z.array(z.string().max(200)).max(CHART_MAX_LABELS).optional(),
  datasets: z.array(dataset).min(1).max(CHART_MAX_DATASETS),
  x_axis: axis.optional(),
  y_axis: axis.optional(),
  legend: z.boolean().optional().describe('show the legend (default: when a dataset has a label)'),
  horizontal: z.boolean().optional().describe('bar charts: horizontal bars'),
  width: z.number().int().min(CHART_MIN_PX).max(CHART_MAX_PX).optional(),
  height: z.number().int().min(CHART_MIN_PX).max(CHART_MAX_PX).optional(),
};

export const chartArgs = z.object(chartArgsShape).superRefine((c, ctx) => {
  for (const [i, d] of c.datasets.entries()) {
    const xy = d.data.length > 0 && typeof d.data[0] === 'object' && d.data[0] !== null;
    if (xy && c.type !== 'scatter' && c.type !== 'line') {
      ctx.addIssue({
        code: 'custom',
        path: ['datasets', i, 'data'],
        message: '{x,y} points are for scatter and line charts; give numbers',
      });
    }
    if (!xy && c.type === 'scatter' && d.data.length > 0) {
      ctx.addIssue({ code: 'custom', path: ['datasets', i, 'data'], message: 'scatter charts take {x,y} points' });
    }
    if (!xy && c.type !== 'scatter' && c.labels && d.data.length > c.labels.length) {
      ctx.addIssue({ code: 'custom', path: ['datasets', i, 'data'], message: 'more values than labels' });
    }
  }
});

export type ChartArgs = z.infer<typeof chartArgs>;

/** The validated spec with sizes filled in (what render_chart returns for the chat UI). */
export interface ChartSpec extends ChartArgs {
  width: number;
  height: number;
}

export function normaliseChart(args: ChartArgs): ChartSpec {
  return { ...args, width: args.width ?? CHART_DEFAULT_WIDTH, height: args.height ?? CHART_DEFAULT_HEIGHT };
}
