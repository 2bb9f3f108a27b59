// Span writes. Every write is an upsert keyed by a derived span id, so a span written again (a
// replay, a resumed run, a retried job, a duplicate batch from a remote worker) stays one span.
import type { Db, Execution, PrismaClient } from "@spool/db";
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

/** Steps a worker just ran, written in one transaction. */
export async function recordSteps(
  prisma: PrismaClient,
  e: ExecutionRef,
  records: StepRecord[],
): Promise<SpanRow[]> {
  if (records.length === 0) return [];
  const rows = records.map((r) => stepSpan(e, r));
  await prisma.$transaction(rows.map((row) => upsert(prisma, row)));
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
