// Span writes. Every write is an upsert keyed by a derived span id, so a span written again (a
// replay, a resumed run, a retried job, a duplicate batch from a remote worker) stays one span.
import { type Db, type Execution, Prisma, type PrismaClient, type pg } from "@spool/db";
import type { StepRecord } from "../runtime/journal.js";
import { executionSpan, type SpanRow, stepSpan, storedStepSpan, waitSpan } from "./span-rows.js";

/** Where finished spans also go (e.g. an OTLP exporter); called after the rows are committed. */
export interface SpanSink {
  export(spans: SpanRow[]): void;
  shutdown(): Promise<void>;
}

export interface ExecutionRef {
  id: string;
  projectId: string;
  rootExecutionId: string | null;
}

const upsert = (db: Db, row: SpanRow) => {
  const { spanId, ...rest } = row;
  return db.span.upsert({ where: { spanId }, create: row, update: rest });
};

/** Steps a worker just ran, written in one statement. */
export async function recordSteps(pool: pg.Pool, e: ExecutionRef, records: StepRecord[]): Promise<SpanRow[]> {
  if (records.length === 0) return [];
  const rows = records.map((r) => stepSpan(e, r));
  await pool.query({
    name: "spool_upsert_spans",
    text: upsertSpansFromJson("$1"),
    values: [spanRowsParam(rows)],
  });
  return rows;
}

/**
 * Brings an execution's span in line with its row (status, result, error, end), adds a span for
 * each stored step that has none yet, and refreshes the spans of its waits.
 *
 * The caller holds the execution's row lock (it has just transitioned the row, or locked it), so
 * span syncs serialize with transitions: the last sync to commit saw the newest row, and a trace
 * never ends older than its run.
 */
export async function syncExecutionSpans(db: Db, execution: Execution): Promise<SpanRow[]> {
  const [steps, waits] = await Promise.all([
    db.stepResult.findMany({ where: { executionId: execution.id }, orderBy: { seq: "asc" } }),
    db.wait.findMany({ where: { executionId: execution.id } }),
  ]);
  const own = executionSpan(execution);
  const waitRows = waits.map((w) => waitSpan(execution, w));
  const waitKeys = new Set(waits.map((w) => w.stepKey));
  // A wait's result row is the same logical step as the wait: its span is the wait's.
  const stepRows = steps.filter((s) => !waitKeys.has(s.stepKey)).map((s) => storedStepSpan(execution, s));
  for (const row of [own, ...waitRows]) await upsert(db, row);
  // Never overwrite: the span the worker wrote when it ran the step knows more (its input).
  if (stepRows.length > 0) await db.span.createMany({ data: stepRows, skipDuplicates: true });
  return [own, ...waitRows];
}

/** Spans sent by a remote worker, scoped to the caller's project. */
export async function ingestSpans(prisma: PrismaClient, projectId: string, rows: SpanRow[]): Promise<number> {
  // A span id already owned by another project is not overwritten (ids are global keys).
  const taken = await prisma.span.findMany({
    where: { spanId: { in: rows.map((r) => r.spanId) }, NOT: { projectId } },
    select: { spanId: true },
  });
  const blocked = new Set(taken.map((t) => t.spanId));
  const mine = rows.filter((r) => !blocked.has(r.spanId)).map((r) => ({ ...r, projectId }));
  await prisma.$transaction(mine.map((row) => upsert(prisma, row)));
  return mine.length;
}

/**
 * Span rows as one JSON parameter for UPSERT_SPANS_FROM_JSON (raw SQL on the hot path: a
 * transition's statement writes its spans in the same round trip). A later row for the same span
 * wins, as with successive upserts.
 */
export function spanRowsParam(rows: SpanRow[]): string {
  const jsonOf = (v: unknown) => (v === Prisma.DbNull || v === Prisma.JsonNull || v === undefined ? null : v);
  const last = new Map(rows.map((r) => [r.spanId, r]));
  return JSON.stringify(
    [...last.values()].map((r) => ({
      span_id: r.spanId,
      trace_id: r.traceId,
      project_id: r.projectId,
      execution_id: r.executionId ?? null,
      parent_span_id: r.parentSpanId ?? null,
      name: r.name,
      span_type: r.spanType,
      workflow_id: r.workflowId ?? null,
      status: r.status ?? null,
      attributes: jsonOf(r.attributes) ?? {},
      input: jsonOf(r.input),
      output: jsonOf(r.output),
      error: jsonOf(r.error),
      started_at: r.startedAt,
      ended_at: r.endedAt ?? null,
    })),
  );
}

/**
 * `INSERT … ON CONFLICT` of the spans in parameter `param` (spanRowsParam), as Prisma's upsert writes
 * them, only when `condition` holds (e.g. the transition they belong to happened).
 */
export const upsertSpansFromJson = (param: string, condition = "true") => `
  INSERT INTO spans (span_id, trace_id, project_id, execution_id, parent_span_id, name, span_type,
                     workflow_id, status, attributes, input, output, error, started_at, ended_at)
  SELECT x.span_id, x.trace_id, x.project_id, x.execution_id, x.parent_span_id, x.name, x.span_type,
         x.workflow_id, x.status, x.attributes, NULLIF(x.input, 'null'), NULLIF(x.output, 'null'),
         NULLIF(x.error, 'null'), x.started_at, x.ended_at
    FROM jsonb_to_recordset(${param}::jsonb) AS x(span_id text, trace_id text, project_id uuid,
         execution_id uuid, parent_span_id text, name text, span_type text, workflow_id text,
         status text, attributes jsonb, input jsonb, output jsonb, error jsonb,
         started_at timestamptz, ended_at timestamptz)
   WHERE ${condition}
  ON CONFLICT (span_id) DO UPDATE SET trace_id = EXCLUDED.trace_id, project_id = EXCLUDED.project_id,
    execution_id = EXCLUDED.execution_id, parent_span_id = EXCLUDED.parent_span_id, name = EXCLUDED.name,
    span_type = EXCLUDED.span_type, workflow_id = EXCLUDED.workflow_id, status = EXCLUDED.status,
    attributes = EXCLUDED.attributes, input = EXCLUDED.input, output = EXCLUDED.output,
    error = EXCLUDED.error, started_at = EXCLUDED.started_at, ended_at = EXCLUDED.ended_at`;
