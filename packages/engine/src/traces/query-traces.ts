// Trace reads: the list of root spans with filters, and one trace's span tree.
import type { Prisma, PrismaClient, Span } from "@spool/db";
import { Prisma as P } from "@spool/db";
import { decodeTimeCursor, notFound, timeCursorOf, toPage } from "@spool/shared";

export interface TraceFilter {
  startTime?: string;
  endTime?: string;
  workflowId?: string;
  status?: string;
  hasError?: boolean;
  rootSpanName?: string;
}

/** Root spans (one per trace), newest first, keyset-paged on (started_at, span_id). */
export async function listTraces(
  prisma: PrismaClient,
  projectId: string,
  filter: TraceFilter,
  page: { limit: number; cursor?: string },
) {
  const after = decodeTimeCursor(page.cursor, { uuidId: false });
  const where: Prisma.SpanWhereInput = {
    projectId,
    parentSpanId: null,
    ...(filter.workflowId ? { workflowId: filter.workflowId } : {}),
    ...(filter.status ? { status: filter.status } : {}),
    ...(filter.rootSpanName ? { name: filter.rootSpanName } : {}),
    ...(filter.hasError === undefined
      ? {}
      : { error: filter.hasError ? { not: P.DbNull } : { equals: P.DbNull } }),
    AND: [
      filter.startTime ? { startedAt: { gte: new Date(filter.startTime) } } : {},
      filter.endTime ? { startedAt: { lte: new Date(filter.endTime) } } : {},
      after
        ? { OR: [{ startedAt: { lt: after.at } }, { startedAt: after.at, spanId: { lt: after.id } }] }
        : {},
    ],
  };
  const rows = await prisma.span.findMany({
    where,
    orderBy: [{ startedAt: "desc" }, { spanId: "desc" }],
    take: page.limit + 1,
  });
  return toPage(rows, page.limit, (s) => timeCursorOf(s.startedAt, s.spanId));
}

/** Every span of a trace, oldest first (see byStartThenTree); 404 when the project has none. */
export async function getTrace(prisma: PrismaClient, projectId: string, traceId: string) {
  const spans = byStartThenTree(await prisma.span.findMany({ where: { projectId, traceId } }));
  if (spans.length === 0) throw notFound("trace", traceId);
  const root: Span = spans.find((s) => s.parentSpanId === null) ?? spans[0]!;
  const ends = spans.map((s) => s.endedAt?.getTime() ?? null);
  return {
    traceId,
    root,
    spans,
    startedAt: root.startedAt,
    endedAt:
      root.endedAt ?? (ends.every((t) => t !== null) ? new Date(Math.max(...(ends as number[]))) : null),
    errorCount: spans.filter((s) => s.error !== null).length,
  };
}

/**
 * Oldest first. Spans that start in the same millisecond (a run and its first step, parallel tool
 * calls) keep the tree's order: parents before children, then siblings by name (`tool-1-1` before
 * `tool-1-2`), not by their hashed ids.
 */
function byStartThenTree(spans: Span[]): Span[] {
  const parentOf = new Map(spans.map((s) => [s.spanId, s.parentSpanId]));
  const depth = (s: Span) => {
    let d = 0;
    for (let p = s.parentSpanId; p !== null && d <= spans.length; p = parentOf.get(p) ?? null) d++;
    return d;
  };
  const depths = new Map(spans.map((s) => [s.spanId, depth(s)]));
  return [...spans].sort(
    (a, b) =>
      a.startedAt.getTime() - b.startedAt.getTime() ||
      (depths.get(a.spanId) ?? 0) - (depths.get(b.spanId) ?? 0) ||
      a.name.localeCompare(b.name, "en", { numeric: true }) ||
      a.spanId.localeCompare(b.spanId),
  );
}
