// Export of finished spans over OTLP/HTTP (JSON) with the standard OpenTelemetry exporter, for
// deployments that already collect traces elsewhere (Jaeger, Tempo, Honeycomb...). Spool's own span
// rows stay the source of truth; this is a copy, sent best effort.
import {
  type Attributes,
  type AttributeValue,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
} from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import type { ReadableSpan } from "@opentelemetry/sdk-trace";
import { Prisma } from "@spool/db";
import type { Logger } from "@spool/shared";
import type { SpanSink } from "./record-spans.js";
import type { SpanRow } from "./span-rows.js";
import type { Traces } from "./traces.js";

/** Large inputs and outputs (whole LLM conversations) are cut to keep export requests small. */
const MAX_JSON_ATTRIBUTE = 8192;

/**
 * Every process that moves runs writes spans (the worker as it runs them, the API on cancel, the
 * scheduler on timeouts and sweeps), so each exports them when the standard variable is set.
 */
export function exportSpansIfConfigured(
  traces: Pick<Traces, "exportTo">,
  options: { serviceName: string; logger: Logger },
): void {
  if (!process.env.OTEL_EXPORTER_OTLP_ENDPOINT) return;
  traces.exportTo(createOtlpSpanSink(options));
  options.logger.info({ endpoint: process.env.OTEL_EXPORTER_OTLP_ENDPOINT }, "exporting spans over OTLP");
}

/**
 * A sink for Engine.traces.exportTo. Endpoint and headers come from the standard variables
 * (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS...) unless `url` is given.
 */
export function createOtlpSpanSink(options: { serviceName: string; logger: Logger; url?: string }): SpanSink {
  const exporter = new OTLPTraceExporter(options.url ? { url: options.url } : {});
  const resource = resourceFromAttributes({ "service.name": options.serviceName });
  return {
    export(rows: SpanRow[]) {
      exporter.export(
        rows.map((r) => toReadableSpan(r, resource)),
        (result) => {
          if (result.error) options.logger.warn({ err: String(result.error) }, "OTLP span export failed");
        },
      );
    },
    shutdown: () => exporter.shutdown(),
  };
}

function toReadableSpan(r: SpanRow, resource: ReadableSpan["resource"]): ReadableSpan {
  const start = new Date(r.startedAt).getTime();
  const end = r.endedAt ? new Date(r.endedAt).getTime() : start;
  const context = { traceId: r.traceId, spanId: r.spanId, traceFlags: TraceFlags.SAMPLED };
  const error = plain(r.error) as { message?: string } | null;
  return {
    name: r.name,
    kind: SpanKind.INTERNAL,
    spanContext: () => context,
    parentSpanContext: r.parentSpanId
      ? { traceId: r.traceId, spanId: r.parentSpanId, traceFlags: TraceFlags.SAMPLED, isRemote: false }
      : undefined,
    startTime: hrTime(start),
    endTime: hrTime(end),
    duration: hrTime(end - start),
    status: error
      ? { code: SpanStatusCode.ERROR, message: error.message ?? "error" }
      : { code: SpanStatusCode.OK },
    attributes: attributesOf(r),
    links: [],
    events: [],
    ended: true,
    resource,
    instrumentationScope: { name: "spool" },
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}

function attributesOf(r: SpanRow): Attributes {
  const out: Attributes = { "spool.span_type": r.spanType };
  if (r.workflowId) out["spool.workflow_id"] = r.workflowId;
  if (r.status) out["spool.status"] = r.status;
  if (r.executionId) out["spool.execution_id"] = r.executionId;
  for (const [k, v] of Object.entries((plain(r.attributes) ?? {}) as Record<string, unknown>)) {
    const value = attributeValue(v);
    if (value !== undefined) out[k.includes(".") ? k : `spool.${k}`] = value;
  }
  for (const field of ["input", "output", "error"] as const) {
    const v = plain(r[field]);
    if (v !== null) out[`spool.${field}`] = JSON.stringify(v).slice(0, MAX_JSON_ATTRIBUTE);
  }
  return out;
}

function attributeValue(v: unknown): AttributeValue | undefined {
  if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") return v;
  if (v === null || v === undefined) return undefined;
  return JSON.stringify(v).slice(0, MAX_JSON_ATTRIBUTE);
}

/** Prisma's DbNull/JsonNull markers mean "no value" here. */
function plain(v: unknown): unknown {
  if (v === undefined || v === null) return null;
  if (v === Prisma.DbNull || v === Prisma.JsonNull || v === Prisma.AnyNull) return null;
  return v;
}

const hrTime = (ms: number): [number, number] => [Math.floor(ms / 1000), (ms % 1000) * 1_000_000];
