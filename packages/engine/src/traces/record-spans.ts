// Span writes. Every write is an upsert keyed by a derived span id, so a span written again (a
// replay, a resumed run, a retried job, a duplicate batch from a remote worker) stays one span.
import type { PrismaClient } from "@spool/db";
import type { StepRecord } from "../runtime/journal.js";
import {
  executionSpan,
  type SpanRow,
  stepSpan,
  storedStepSpan,
  type WorkflowKind,
  waitSpan,
} from "./span-rows.js";

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

const upsert = (prisma: PrismaClient, row: SpanRow) => {
  const { spanId, ...rest } = row;
  return prisma.span.upsert({ where: { spanId }, create: row, update: rest });
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
 * each stored step that has none yet, and refreshes the spans of its waits. Run by the worker after
 * each transition it makes.
 */
export async function syncExecution(
  prisma: PrismaClient,
  executionId: string,
  kind: WorkflowKind,
): Promise<SpanRow[]> {
  const execution = await prisma.execution.findUnique({ where: { id: executionId } });
  if (!execution) return [];
  const [steps, waits] = await Promise.all([
    prisma.stepResult.findMany({ where: { executionId }, orderBy: { seq: "asc" } }),
    prisma.wait.findMany({ where: { executionId } }),
  ]);
  const own = executionSpan(execution, kind);
  const waitRows = waits.map((w) => waitSpan(execution, w));
  const waitKeys = new Set(waits.map((w) => w.stepKey));
  // A wait's result row is the same logical step as the wait: its span is the wait's.
  const stepRows = steps.filter((s) => !waitKeys.has(s.stepKey)).map((s) => storedStepSpan(execution, s));
  await prisma.$transaction([
    upsert(prisma, own),
    ...waitRows.map((row) => upsert(prisma, row)),
    // Never overwrite: the span the worker wrote when it ran the step knows more (its input).
    prisma.span.createMany({ data: stepRows, skipDuplicates: true }),
  ]);
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
