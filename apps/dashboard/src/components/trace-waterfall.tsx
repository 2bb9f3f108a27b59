import { useInfiniteQuery } from "@tanstack/react-query";
import { useState } from "react";
import { ApiError, get } from "../api";
import { elapsedMs, formatDuration } from "../format";
import { type Execution, type Span, type Trace, traceIdOf } from "../types";
import { ErrorMessage } from "./error-message";
import { SpanDetails, spanSummary } from "./span-details";

const PAGE = 1000;

interface Row {
  span: Span;
  depth: number;
}

/** Depth-first, children in start order: each span under its parent, as a waterfall reads. */
function treeOrder(spans: Span[]): Row[] {
  const ids = new Set(spans.map((s) => s.span_id));
  const children = new Map<string | null, Span[]>();
  for (const s of spans) {
    const parent = s.parent_span_id && ids.has(s.parent_span_id) ? s.parent_span_id : null;
    children.set(parent, [...(children.get(parent) ?? []), s]);
  }
  const rows: Row[] = [];
  const visit = (parent: string | null, depth: number) => {
    const list = [...(children.get(parent) ?? [])].sort((a, b) => a.started_at.localeCompare(b.started_at));
    for (const s of list) {
      rows.push({ span: s, depth });
      visit(s.span_id, depth + 1);
    }
  };
  visit(null, 0);
  return rows;
}

/** The run's whole trace (its root run and every child run) as bars placed by start and end. */
export function TraceWaterfall({ run, live }: { run: Execution; live: boolean }) {
  const traceId = traceIdOf(run);
  const trace = useInfiniteQuery({
    queryKey: ["trace", traceId],
    queryFn: ({ pageParam, signal }) =>
      get<Trace>(`/traces/${traceId}`, { limit: PAGE, cursor: pageParam }, signal),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.next_cursor ?? undefined,
    refetchInterval: live ? 2000 : false,
    // A run that has not started yet has no trace: not an error worth retrying.
    retry: (count, err) => !(err instanceof ApiError && err.status === 404) && count < 2,
  });
  const [open, setOpen] = useState<string | null>(null);
  const spans = trace.data?.pages.flatMap((p) => p.spans) ?? [];
  const first = trace.data?.pages[0];
  const notYet = trace.error instanceof ApiError && trace.error.status === 404;
  const rows = treeOrder(spans);
  const now = Date.now();
  const t0 = Math.min(...spans.map((s) => new Date(s.started_at).getTime()));
  const t1 = Math.max(...spans.map((s) => (s.ended_at ? new Date(s.ended_at).getTime() : now)), t0 + 1);

  return (
    <section aria-labelledby="trace-h" className="card">
      <h2 id="trace-h">Trace</h2>
      {notYet ? (
        <p className="muted">No trace yet: the run has not started.</p>
      ) : (
        <ErrorMessage error={trace.error} />
      )}
      {trace.isPending ? <p>Loading the trace…</p> : null}
      {first ? (
        <p className="muted">
          {first.span_count} spans{first.error_count ? `, ${first.error_count} with an error` : ""} ·{" "}
          {formatDuration(elapsedMs(first.started_at, first.ended_at))}
          {first.ended_at ? "" : " so far"} · trace <code>{first.trace_id}</code>
        </p>
      ) : null}
      <ol className="waterfall">
        {rows.map(({ span: s, depth }) => {
          const start = new Date(s.started_at).getTime();
          const end = s.ended_at ? new Date(s.ended_at).getTime() : now;
          const left = ((start - t0) / (t1 - t0)) * 100;
          const width = Math.max(0.6, ((end - start) / (t1 - t0)) * 100);
          const expanded = open === s.span_id;
          const detailsId = `span-${s.span_id}`;
          const failed = s.error !== null;
          return (
            <li key={s.span_id} className={`span span-${s.span_type}${failed ? " span-error" : ""}`}>
              <button
                type="button"
                className="span-row"
                aria-expanded={expanded}
                aria-controls={detailsId}
                onClick={() => setOpen(expanded ? null : s.span_id)}
              >
                <span className="span-label" style={{ paddingLeft: `${Math.min(depth, 8) * 0.9}rem` }}>
                  <span className="tag">{s.span_type}</span> <span className="span-name">{s.name}</span>
                  <span className="span-summary">{spanSummary(s)}</span>
                  {failed ? <span className="error-text"> · error</span> : null}
                </span>
                <span className="track" aria-hidden="true">
                  <span
                    className={`bar${s.ended_at ? "" : " open"}`}
                    style={{ left: `${Math.min(left, 99.4)}%`, width: `${Math.min(width, 100 - left)}%` }}
                  />
                </span>
                <span className="span-duration">
                  {formatDuration(end - start)}
                  {s.ended_at ? "" : " so far"}
                </span>
              </button>
              {expanded ? (
                <div id={detailsId} className="span-details">
                  <SpanDetails span={s} />
                </div>
              ) : null}
            </li>
          );
        })}
      </ol>
      {trace.hasNextPage ? (
        <button type="button" onClick={() => trace.fetchNextPage()} disabled={trace.isFetchingNextPage}>
          Load more spans
        </button>
      ) : null}
    </section>
  );
}
