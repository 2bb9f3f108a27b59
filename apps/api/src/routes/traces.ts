// Traces: list traces (root spans) with filters, read one trace's span tree, and ingest spans from
// remote workers.
import { createRoute, type z } from "@hono/zod-openapi";
import {
  DetailPageQuery,
  IngestSpansBody,
  IngestSpansResponse,
  ListTracesQuery,
  ListTracesResponse,
  type SpanResponse,
  type SpanType,
  TraceParams,
  TraceResponse,
  type TraceSummary,
} from "@spool/shared";
import type { App } from "../context.js";
import { errorResponses } from "../errors.js";
import { AUTHENTICATED, json, jsonBody, ProjectHeaders } from "../openapi.js";

const base = { security: AUTHENTICATED, tags: ["Traces"] };

const listTraces = createRoute({
  ...base,
  method: "get",
  path: "/api/v1/traces",
  summary: "List traces (one per root execution), newest first",
  request: { headers: ProjectHeaders, query: ListTracesQuery },
  responses: { 200: json(ListTracesResponse, "Traces"), ...errorResponses(400, 401, 403, 404) },
});

const getTrace = createRoute({
  ...base,
  method: "get",
  path: "/api/v1/traces/{trace_id}",
  summary: "Get a trace with its spans, a page at a time",
  request: { headers: ProjectHeaders, params: TraceParams, query: DetailPageQuery },
  responses: { 200: json(TraceResponse, "The trace and its spans"), ...errorResponses(400, 401, 403, 404) },
});

const ingestSpans = createRoute({
  ...base,
  method: "post",
  path: "/internal/spans/batch",
  summary: "Record spans from a remote worker (upserts by span_id)",
  request: { headers: ProjectHeaders, body: jsonBody(IngestSpansBody) },
  responses: { 200: json(IngestSpansResponse, "Stored"), ...errorResponses(400, 401, 403, 404, 413, 415) },
});

type Row = {
  spanId: string;
  parentSpanId: string | null;
  name: string;
  spanType: string;
  status: string | null;
  attributes: unknown;
  input: unknown;
  output: unknown;
  error: unknown;
  startedAt: Date;
  endedAt: Date | null;
  traceId: string;
};

const presentSummary = (s: Row): z.infer<typeof TraceSummary> => ({
  trace_id: s.traceId,
  root_span_name: s.name,
  root_span_type: s.spanType as SpanType,
  started_at: s.startedAt.toISOString(),
  ended_at: s.endedAt?.toISOString() ?? null,
  duration_ms: s.endedAt ? s.endedAt.getTime() - s.startedAt.getTime() : null,
  status: s.status,
  error: s.error ?? null,
});

const presentSpan = (s: Row): z.infer<typeof SpanResponse> => ({
  span_id: s.spanId,
  parent_span_id: s.parentSpanId,
  name: s.name,
  span_type: s.spanType as SpanType,
  attributes: (s.attributes ?? {}) as Record<string, unknown>,
  input: s.input ?? null,
  output: s.output ?? null,
  error: s.error ?? null,
  started_at: s.startedAt.toISOString(),
  ended_at: s.endedAt?.toISOString() ?? null,
});

export function registerTraces(app: App) {
  app.openapi(listTraces, async (c) => {
    const q = c.req.valid("query");
    const page = await c.get("engine").traces.list(
      c.get("projectId"),
      {
        startTime: q.start_time,
        endTime: q.end_time,
        workflowId: q.workflow_id,
        status: q.status,
        hasError: q.has_error,
        rootSpanName: q.root_span_name,
      },
      { limit: q.limit, cursor: q.cursor },
    );
    return c.json({ traces: page.items.map(presentSummary), next_cursor: page.nextCursor }, 200);
  });

  app.openapi(getTrace, async (c) => {
    const { limit, cursor } = c.req.valid("query");
    const t = await c.get("engine").traces.get(c.get("projectId"), c.req.valid("param").trace_id, {
      limit,
      cursor,
    });
    return c.json(
      {
        trace_id: t.traceId,
        status: t.root.status,
        started_at: t.startedAt.toISOString(),
        ended_at: t.endedAt?.toISOString() ?? null,
        span_count: t.spanCount,
        error_count: t.errorCount,
        spans: t.spans.map(presentSpan),
        next_cursor: t.nextCursor,
      },
      200,
    );
  });

  app.openapi(ingestSpans, async (c) => {
    const accepted = await c.get("engine").traces.ingest(c.get("projectId"), c.req.valid("json").spans);
    return c.json({ accepted }, 200);
  });
}
