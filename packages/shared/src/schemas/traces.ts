// The Traces contract: a root execution and its children form one trace; executions, steps, child
// runs, LLM calls and tool calls are its spans.
import { z } from "@hono/zod-openapi";
import { EXECUTION_STATUSES } from "../execution-status.js";
import { ClientId } from "../ids.js";
import { NextCursor, PageQuery } from "../pagination.js";
import { JsonObject, JsonValue, NullableTimestamp, Text, Timestamp } from "./common.js";

export const SPAN_TYPES = ["workflow", "step", "agent", "llm", "tool", "custom"] as const;
export type SpanType = (typeof SPAN_TYPES)[number];

/** Trace ids are root execution ids without dashes (32 hex); span ids are 16 hex (as in OpenTelemetry). */
export const TraceId = z
  .string()
  .regex(/^[0-9a-f]{32}$/, "must be 32 lowercase hex characters (the root execution id without dashes)")
  .openapi({ example: "0b6f5c9e6d1c4f5e9d6b2f0d1e6a7c11" });
export const SpanId = z
  .string()
  .regex(/^[0-9a-f]{16}$/, "must be 16 lowercase hex characters")
  .openapi({ example: "5c1e0f2a9b3d4e6f" });

export const TraceParams = z.object({
  trace_id: TraceId.openapi({ param: { name: "trace_id", in: "path" } }),
});

const booleanQuery = z
  .enum(["true", "false"])
  .transform((v) => v === "true")
  .openapi({ type: "boolean" });

export const ListTracesQuery = PageQuery.extend({
  start_time: Timestamp.optional().openapi({ description: "Traces that started at or after this time" }),
  end_time: Timestamp.optional().openapi({ description: "Traces that started at or before this time" }),
  workflow_id: ClientId.optional(),
  status: z.enum(EXECUTION_STATUSES).optional(),
  has_error: booleanQuery
    .optional()
    .openapi({ description: "Only traces whose root run failed (or did not)" }),
  root_span_name: Text.min(1).max(500).optional(),
});

export const TraceSummary = z
  .object({
    trace_id: z.string(),
    root_span_name: z.string(),
    root_span_type: z.enum(SPAN_TYPES),
    started_at: Timestamp,
    ended_at: NullableTimestamp,
    duration_ms: z.number().int().nullable(),
    status: z.string().nullable(),
    error: JsonValue.nullable(),
  })
  .openapi("TraceSummary");

export const ListTracesResponse = z
  .object({ traces: z.array(TraceSummary), next_cursor: NextCursor })
  .openapi("ListTracesResponse");

export const SpanResponse = z
  .object({
    span_id: z.string(),
    parent_span_id: z.string().nullable(),
    name: z.string(),
    span_type: z.enum(SPAN_TYPES),
    attributes: JsonObject,
    input: JsonValue.nullable(),
    output: JsonValue.nullable(),
    error: JsonValue.nullable(),
    started_at: Timestamp,
    ended_at: NullableTimestamp,
  })
  .openapi("Span");

export const TraceResponse = z
  .object({
    trace_id: z.string(),
    status: z.string().nullable(),
    started_at: Timestamp,
    ended_at: NullableTimestamp,
    span_count: z.number().int().openapi({ description: "Spans in the whole trace (not only this page)" }),
    error_count: z.number().int().openapi({ description: "Spans of the whole trace that have an error" }),
    spans: z.array(SpanResponse).openapi({
      description: "One page of the spans: oldest first; parents before children when they start together",
    }),
    next_cursor: NextCursor,
  })
  .openapi("Trace");

/** A span type a worker sends; one Spool does not know (an OpenTelemetry tool's own) is kept as "custom". */
const IngestSpanType = Text.min(1)
  .max(100)
  .transform((t): SpanType => ((SPAN_TYPES as readonly string[]).includes(t) ? (t as SpanType) : "custom"))
  .openapi({ type: "string", enum: [...SPAN_TYPES], description: "Unknown types are stored as `custom`" });

/** A span from a remote worker. Any field the worker has no value for may be null. */
export const IngestSpan = z
  .object({
    trace_id: TraceId,
    span_id: SpanId,
    parent_span_id: SpanId.nullish(),
    name: Text.min(1).max(500),
    span_type: IngestSpanType,
    attributes: JsonObject.nullish().openapi({
      description:
        "Free-form; on a root span, `workflow_id` and `status` (strings) feed the trace list's filters",
    }),
    events: JsonValue.nullish().openapi({ description: "Span events; kept under `attributes.events`" }),
    input: JsonValue.nullish(),
    output: JsonValue.nullish(),
    error: JsonValue.nullish(),
    initial_state: JsonValue.nullish().openapi({ description: "Kept under `attributes.initial_state`" }),
    final_state: JsonValue.nullish().openapi({ description: "Kept under `attributes.final_state`" }),
    started_at: Timestamp.nullish().openapi({ description: "Defaults to ended_at, or now" }),
    ended_at: Timestamp.nullish(),
  })
  .openapi("IngestSpan");

export const IngestSpansBody = z
  .object({ spans: z.array(IngestSpan).min(1).max(1000) })
  .openapi("IngestSpansBody");
export const IngestSpansResponse = z.object({ accepted: z.number().int() }).openapi("IngestSpansResponse");
