/**
 * OpenTelemetry export (docs/audit.md#opentelemetry), off unless OTEL_EXPORTER_OTLP_ENDPOINT is
 * set. One trace per chat turn, built by the daemon from what it already sees:
 *
 *   chat.turn                         the turn (wraps the TurnRunner)
 *   ├─ tool <name>                    each tool call (tool_start → tool_end events)
 *   │  └─ proxy <route>               each request the sandbox's proxy made for that call
 *   └─ model call / proxy <route>     requests of no tool call (the model's own)
 *
 * The proxied requests come from the audit records the supervisor relays (wraps the
 * SandboxAuditor), each with its turn and tool call id, so the spans and the `proxy_requests`
 * rows describe the same requests. The trace id is the turn id's 32 hex digits: the audit page,
 * the rows and the trace name the same turn. Attributes hold ids, names, methods, path
 * templates, statuses, codes, sizes and times — never a prompt, body, token or placeholder.
 * The existing Prometheus metrics are exported over OTLP as well, read from their registry.
 */
import { context, trace, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api';
import type { ConnectorCallAudit } from './host/connector-gateway.js';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BatchSpanProcessor, RandomIdGenerator, TracerProvider, type IdGenerator } from '@opentelemetry/sdk-trace';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { Config, Logger } from '../core/index.js';
import type {
  AgentEvent,
  MailHold,
  ProxyDecisionRecord,
  SandboxAuditor,
  TurnRequest,
  TurnResult,
  TurnRunner,
} from '../core/sandbox-protocol.js';

/** A finished turn's spans stay this long for proxied requests reported after its end. */
const LATE_RECORDS_MS = 10_000;

export interface Telemetry {
  /** The turn runner whose turns become traces. */
  runner(inner: TurnRunner): TurnRunner;
  /** The auditor whose proxied requests become spans (every call is passed on unchanged). */
  auditor(inner: SandboxAuditor): SandboxAuditor;
  /** A connector call made by the egress gateway: span `execute_tool <tool>` (GenAI semantic conventions) under its tool call, else its turn. */
  connectorCall(a: ConnectorCallAudit): void;
  /** Export what is buffered and stop. */
  shutdown(): Promise<void>;
}

/** Trace ids from turn ids: the next root span takes `next` (set just before it starts). */
class TurnTraceIds implements IdGenerator {
  next?: string;
  private readonly random = new RandomIdGenerator();
  generateTraceId(): string {
    const id = this.next ?? this.random.generateTraceId();
    this.next = undefined;
    return id;
  }
  generateSpanId(): string {
    return this.random.generateSpanId();
  }
}

/** A turn id (a UUID) as a trace id; anything else gets a random one. */
export function traceIdOf(turnId: string): string | undefined {
  const hex = turnId.replace(/-/g, '').toLowerCase();
  return /^[0-9a-f]{32}$/.test(hex) && !/^0+$/.test(hex) ? hex : undefined;
}

/** The first ERR_* code in a tool's error text (the text itself is not exported). */
const codeIn = (s: string | undefined) => (s ? /\bERR_[A-Z0-9_]{2,60}\b/.exec(s)?.[0] : undefined);

interface LiveTurn {
  span: Span;
  ctx: Context;
  tools: Map<string, { span: Span; ctx: Context }>;
}

/** A tool call's span: started at tool_start under its turn, ended at tool_end. */
function toolEvent(tracer: Tracer, turn: LiveTurn, e: AgentEvent): void {
  if (e.type === 'tool_start') {
    const span = tracer.startSpan(
      `tool ${e.tool}`,
      { attributes: { 'airlock.tool': e.tool, 'airlock.call_id': e.call_id } },
      turn.ctx,
    );
    turn.tools.set(e.call_id, { span, ctx: trace.setSpan(turn.ctx, span) });
  } else if (e.type === 'tool_end') {
    const t = turn.tools.get(e.call_id);
    if (!t) return;
    const code = e.ok ? undefined : (codeIn(e.error) ?? (e.error === 'cancelled' ? 'cancelled' : 'failed'));
    t.span.setAttributes({ 'airlock.ok': e.ok, ...(code ? { 'airlock.error_code': code } : {}) });
    if (!e.ok) t.span.setStatus({ code: 2 });
    t.span.end();
  }
}

/** The attributes of a proxied request's span (never a URL, header or body). */
function proxyAttributes(d: ProxyDecisionRecord): Attributes {
  return {
    'airlock.route': d.route ?? 'none',
    'airlock.outcome': d.outcome,
    'http.response.status_code': d.status,
    ...(d.method ? { 'http.request.method': d.method } : {}),
    ...(d.template ? { 'url.template': d.template } : {}),
    ...(d.code ? { 'airlock.error_code': d.code } : {}),
    ...(d.call_id ? { 'airlock.call_id': d.call_id } : {}),
    ...(typeof d.req_bytes === 'number' ? { 'http.request.body.size': d.req_bytes } : {}),
    ...(typeof d.res_bytes === 'number' ? { 'http.response.body.size': d.res_bytes } : {}),
    ...(typeof d.recipients === 'number' ? { 'airlock.mail.recipients': d.recipients } : {}),
  };
}

/** What a traced runner needs from startTelemetry. */
interface TraceKit {
  tracer: Tracer;
  ids: TurnTraceIds;
  live: Map<string, LiveTurn>;
  nodeId: string;
}

/** A turn runner that traces each turn (the turn id is the trace id) and its tool calls. */
function tracedRunner({ tracer, ids, live, nodeId }: TraceKit, inner: TurnRunner): TurnRunner {
  return {
    async runTurn(req: TurnRequest): Promise<TurnResult> {
      ids.next = traceIdOf(req.turnId);
      const span = tracer.startSpan('chat.turn', {
        root: true,
        attributes: {
          'airlock.session_id': req.sessionId,
          'airlock.turn_id': req.turnId,
          'enduser.id': String(req.userId),
          'airlock.node_id': nodeId,
        },
      });
      const turn: LiveTurn = { span, ctx: trace.setSpan(context.active(), span), tools: new Map() };
      live.set(req.turnId, turn);
      const onEvent = (e: AgentEvent) => {
        try {
          toolEvent(tracer, turn, e);
        } catch {
          // Telemetry never breaks a turn.
        }
        req.onEvent(e);
      };
      try {
        const r = await inner.runTurn({ ...req, onEvent });
        span.setAttributes({
          'airlock.stop_reason': r.stop_reason,
          ...(r.error ? { 'airlock.error_code': r.error.code } : {}),
        });
        if (r.stop_reason === 'error') span.setStatus({ code: 2 });
        return r;
      } catch (err) {
        span.setAttributes({
          'airlock.error_code': codeIn(String((err as { code?: unknown }).code ?? '')) ?? 'failed',
        });
        span.setStatus({ code: 2 });
        throw err;
      } finally {
        for (const t of turn.tools.values()) if (t.span.isRecording()) t.span.end();
        span.end();
        setTimeout(() => live.delete(req.turnId), LATE_RECORDS_MS).unref();
      }
    },
  };
}

export function startTelemetry(config: Readonly<Config>, log: Logger, registry?: Registry): Telemetry | undefined {
  const endpoint = config.telemetry.endpoint;
  if (!endpoint) return undefined;
  const base = endpoint.replace(/\/+$/, '');
  const resource = resourceFromAttributes({
    'service.name': config.telemetry.serviceName,
    'service.instance.id': config.node.id,
  });
  const ids = new TurnTraceIds();
  const provider = new TracerProvider({
    resource,
    idGenerator: ids,
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: new OTLPTraceExporter({ url: `${base}/v1/traces` }),
        scheduledDelayMillis: 1000,
      }),
    ],
  });
  const tracer = provider.getTracer('airlock');
  const meters = registry
    ? new MeterProvider({
        resource,
        readers: [
          new PeriodicExportingMetricReader({
            exporter: new OTLPMetricExporter({ url: `${base}/v1/metrics` }),
            exportIntervalMillis: config.telemetry.metricIntervalMs,
          }),
        ],
      })
    : undefined;
  if (meters && registry) bridgeMetrics(meters, registry);
  log.info({ endpoint: base }, 'OpenTelemetry export on');

  const live = new Map<string, LiveTurn>();

  return {
    runner: (inner: TurnRunner): TurnRunner => tracedRunner({ tracer, ids, live, nodeId: config.node.id }, inner),

    auditor(inner: SandboxAuditor): SandboxAuditor {
      return {
        proxied(s: { sessionId: string; userId: number }, d: ProxyDecisionRecord): void {
          inner.proxied(s, d);
          try {
            const turn = d.turn_id ? live.get(d.turn_id) : undefined;
            if (!turn) return;
            const parent = (d.call_id && turn.tools.get(d.call_id)?.ctx) || turn.ctx;
            const end = Date.now();
            const attributes = proxyAttributes(d);
            const span = tracer.startSpan(
              d.route === 'model' ? 'model call' : `proxy ${d.route ?? 'none'}`,
              { startTime: end - (d.ms ?? 0), attributes },
              parent,
            );
            if (d.outcome !== 'forwarded') span.setStatus({ code: 2 });
            span.end(end);
          } catch {
            // Telemetry never breaks the audit.
          }
        },
        hold: (s, h: MailHold) => inner.hold(s, h),
        sessionEnded: (sessionId) => inner.sessionEnded(sessionId),
      };
    },

    connectorCall(a: ConnectorCallAudit): void {
      try {
        const turn = a.turnId ? live.get(a.turnId) : undefined;
        if (!turn) return;
        const parent = (a.callId && turn.tools.get(a.callId)?.ctx) || turn.ctx;
        const name = `${a.connector}__${a.tool}`;
        const end = Date.now();
        const span = tracer.startSpan(
          `execute_tool ${name}`,
          {
            startTime: end - a.ms,
            attributes: {
              'gen_ai.operation.name': 'execute_tool',
              'gen_ai.tool.name': name,
              'gen_ai.tool.type': 'extension',
              'airlock.connector': a.connector,
              'airlock.outcome': a.status,
              'http.response.body.size': a.bytes,
              ...(a.code ? { 'airlock.error_code': a.code } : {}),
              ...(a.callId ? { 'gen_ai.tool.call.id': a.callId } : {}),
            },
          },
          parent,
        );
        if (a.status !== 'ok') span.setStatus({ code: 2 });
        span.end(end);
      } catch {
        // Telemetry never breaks a call.
      }
    },

    async shutdown(): Promise<void> {
      await Promise.allSettled([provider.shutdown(), meters?.shutdown()]);
    },
  };
}

/**
 * The Prometheus registry's metrics as OTel observable instruments, read at each export: counters
 * as cumulative sums, the rest (gauges, histogram buckets, sums and counts) as gauges.
 */
function bridgeMetrics(meters: MeterProvider, registry: Registry): void {
  const meter = meters.getMeter('airlock');
  for (const { name } of registry.getMetricsAsArray()) {
    const m = registry.getSingleMetric(name);
    if (!m) continue;
    const type = m instanceof Counter ? 'counter' : m instanceof Histogram ? 'histogram' : 'gauge';
    // A histogram is exported as its series: _bucket (with le), _sum and _count.
    const series = type === 'histogram' ? [`${name}_bucket`, `${name}_sum`, `${name}_count`] : [name];
    for (const metricName of series) {
      const inst =
        type === 'counter' ? meter.createObservableCounter(metricName) : meter.createObservableGauge(metricName);
      inst.addCallback(async (r) => {
        const got = await m.get();
        for (const v of got.values) {
          const vn = (v as { metricName?: string }).metricName ?? got.name;
          if (vn === metricName) r.observe(v.value, v.labels as Attributes);
        }
      });
    }
  }
}
