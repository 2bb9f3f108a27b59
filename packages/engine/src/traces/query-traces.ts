// Trace reads: the list of root spans with filters, and one trace's span tree.
import type { Prisma, PrismaClient, Span } from "@spool/db";
import { Prisma as P } from "@spool/db";
import { decodeTimeCursor, invalidCursor, notFound, timeCursorOf, toPage } from "@spool/shared";

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

/** What the order of a trace's spans and its summary need of each span: none of its payloads. */
type SpanKey = Pick<Span, "spanId" | "parentSpanId" | "name" | "startedAt" | "endedAt" | "status"> & {
  hasError: boolean;
};

/**
 * One page of a trace's spans in the trace's order (see orderSpans), with the whole trace's summary;
 * 404 when the project has no span of it. Keyset-paged: the cursor is the last span's (started_at,
 * span_id), and the order's other keys (depth in the tree, name) are that span's own, so a page
 * starts right after it whatever was added meanwhile. The order needs the whole tree, so each page
 * reads every span's key columns (a few dozen bytes a span), and only its own spans whole.
 */
export async function getTrace(
  prisma: PrismaClient,
  projectId: string,
  traceId: string,
  page: { limit: number; cursor?: string },
) {
  const after = decodeTimeCursor(page.cursor, { uuidId: false });
  // Purpose: every span of the trace, without its payloads. Params: project, trace. Locks: none.
  // Result: one row per span.
  const { keys, depths } = orderSpans(
    await prisma.$queryRaw<SpanKey[]>(P.sql`
      SELECT span_id AS "spanId", parent_span_id AS "parentSpanId", name, started_at AS "startedAt",
             ended_at AS "endedAt", status, (error IS NOT NULL AND error <> 'null'::jsonb) AS "hasError"
      FROM spans WHERE project_id = ${projectId}::uuid AND trace_id = ${traceId}`),
  );
  if (keys.length === 0) throw notFound("trace", traceId);
  const rootKey = keys.find((s) => s.parentSpanId === null) ?? keys[0]!;
  let from = 0;
  if (after) {
    // Spans are never deleted: a cursor naming no span of this trace was not made for it.
    const last = keys.find((s) => s.spanId === after.id);
    if (!last) throw invalidCursor();
    const key = { ...last, startedAt: after.at };
    from = keys.findIndex((s) => compareSpans(s, key, depths) > 0);
    if (from < 0) from = keys.length;
  }
  const { items, nextCursor } = toPage(keys.slice(from, from + page.limit + 1), page.limit, (s) =>
    timeCursorOf(s.startedAt, s.spanId),
  );
  // The page's spans and the root, whole.
  const rows = await prisma.span.findMany({
    where: { projectId, traceId, spanId: { in: [rootKey.spanId, ...items.map((s) => s.spanId)] } },
  });
  const byId = new Map(rows.map((r) => [r.spanId, r]));
  const root = byId.get(rootKey.spanId);
  if (!root) throw notFound("trace", traceId);
  const ends = keys.map((s) => s.endedAt?.getTime() ?? null);
  return {
    traceId,
    root,
    // A span is left out only if it vanished between the two reads (they never do today).
    spans: items.flatMap((s) => byId.get(s.spanId) ?? []),
    spanCount: keys.length,
    nextCursor,
    startedAt: root.startedAt,
    endedAt:
      root.endedAt ?? (ends.every((t) => t !== null) ? new Date(Math.max(...(ends as number[]))) : null),
    errorCount: keys.filter((s) => s.hasError).length,
  };
}

type Keyed = Pick<Span, "spanId" | "parentSpanId" | "name" | "startedAt">;

/**
 * Oldest first. Spans that start in the same millisecond (a run and its first step, parallel tool
 * calls) keep the tree's order: parents before children, then siblings by name (`tool-1-1` before
 * `tool-1-2`), not by their hashed ids.
 */
function orderSpans<T extends Keyed>(spans: T[]): { keys: T[]; depths: Map<string, number> } {
  const parentOf = new Map(spans.map((s) => [s.spanId, s.parentSpanId]));
  const depth = (s: T) => {
    let d = 0;
    for (let p = s.parentSpanId; p !== null && d <= spans.length; p = parentOf.get(p) ?? null) d++;
    return d;
  };
  const depths = new Map(spans.map((s) => [s.spanId, depth(s)]));
  return { keys: [...spans].sort((a, b) => compareSpans(a, b, depths)), depths };
}

function compareSpans(a: Keyed, b: Keyed, depths: Map<string, number>): number {
  return (
    a.startedAt.getTime() - b.startedAt.getTime() ||
    (depths.get(a.spanId) ?? 0) - (depths.get(b.spanId) ?? 0) ||
    a.name.localeCompare(b.name, "en", { numeric: true }) ||
    a.spanId.localeCompare(b.spanId)
  );
}
