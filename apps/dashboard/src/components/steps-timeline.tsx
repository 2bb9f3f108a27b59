import { useInfiniteQuery } from "@tanstack/react-query";
import { Link } from "@tanstack/react-router";
import type { ReactNode } from "react";
import { get } from "../api";
import { elapsedMs, formatDuration, shortId } from "../format";
import type { Execution, Page, Step } from "../types";
import { ErrorMessage } from "./error-message";
import { JsonView } from "./json-view";
import { StatusBadge } from "./status-badge";
import { Time } from "./time";

const PAGE = 1000;

/** A run's steps in the order it reached them, each placed on the run's own time line. */
export function StepsTimeline({ run, live }: { run: Execution; live: boolean }) {
  const steps = useInfiniteQuery({
    queryKey: ["steps", run.id],
    queryFn: ({ pageParam, signal }) =>
      get<Page<"steps", Step>>(`/executions/${run.id}/steps`, { limit: PAGE, cursor: pageParam }, signal),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.next_cursor ?? undefined,
    refetchInterval: live ? 2000 : false,
  });
  const rows = steps.data?.pages.flatMap((p) => p.steps) ?? [];
  const start = new Date(run.started_at ?? run.created_at).getTime();
  const ends = rows.map((s) => new Date(s.completed_at ?? s.started_at ?? run.created_at).getTime());
  const runEnd = run.completed_at ?? run.cancelled_at;
  const end = Math.max(runEnd ? new Date(runEnd).getTime() : Date.now(), ...ends, start + 1);

  return (
    <section aria-labelledby="steps-h" className="card">
      <h2 id="steps-h">Steps</h2>
      <ErrorMessage error={steps.error} />
      {steps.isPending ? <p>Loading steps…</p> : null}
      {steps.isSuccess && rows.length === 0 ? <p className="muted">No steps yet.</p> : null}
      <ol className="timeline">
        {rows.map((s) => (
          <StepRow key={s.step_key} step={s} start={start} end={end} />
        ))}
      </ol>
      {steps.hasNextPage ? (
        <button type="button" onClick={() => steps.fetchNextPage()} disabled={steps.isFetchingNextPage}>
          Load more steps
        </button>
      ) : null}
    </section>
  );
}

function StepRow({ step: s, start, end }: { step: Step; start: number; end: number }) {
  const from = s.started_at ? new Date(s.started_at).getTime() : null;
  const to = s.completed_at ? new Date(s.completed_at).getTime() : Date.now();
  const span = end - start;
  const left = from === null ? 0 : ((from - start) / span) * 100;
  const width = from === null ? 0 : Math.max(0.6, ((to - from) / span) * 100);
  const retries = s.attempts - 1;
  return (
    <li className={`step step-${s.status}`}>
      <div className="step-head">
        <span className="step-key">{s.step_key}</span>
        <span className="tag">{s.kind}</span>
        <StatusBadge status={s.status} />
        <span className="muted">
          {s.started_at ? formatDuration(elapsedMs(s.started_at, s.completed_at)) : ""}
          {s.started_at && !s.completed_at ? " so far" : ""}
        </span>
        {s.attempts > 1 ? (
          <span className="retries">
            {s.attempts} attempts ({retries} {retries === 1 ? "retry" : "retries"})
          </span>
        ) : null}
      </div>
      {from !== null ? (
        <div className="track" aria-hidden="true">
          <div
            className="bar"
            style={{ left: `${Math.min(left, 99.4)}%`, width: `${Math.min(width, 100 - left)}%` }}
          />
        </div>
      ) : null}
      {s.status === "pending" ? <PendingWait step={s} /> : null}
      {s.error ? (
        <p className="error-text">
          <strong>{s.error.name}</strong>: {s.error.message}
        </p>
      ) : null}
      {s.status === "completed" && s.output !== null && s.output !== undefined ? (
        <details>
          <summary>Output of {s.step_key}</summary>
          <JsonView value={s.output} />
        </details>
      ) : null}
    </li>
  );
}

/** What a parked step waits for, and until when. */
function PendingWait({ step: s }: { step: Step }) {
  const until = s.wake_at ?? s.expires_at;
  const children = s.child_execution_ids?.length
    ? s.child_execution_ids
    : s.child_execution_id
      ? [s.child_execution_id]
      : [];
  let what: ReactNode;
  switch (s.kind) {
    case "sleep":
      what = "Sleeping";
      break;
    case "event":
      what = (
        <>
          Waiting for an event on topic <code>{s.topic}</code>
        </>
      );
      break;
    case "suspend":
      what = "Waiting for a person to resume the run";
      break;
    case "invoke":
      what = (
        <>
          Waiting for {children.length === 1 ? "child run" : `${children.length} child runs`}{" "}
          {children.map((id, i) => (
            <span key={id}>
              {i > 0 ? ", " : ""}
              <Link to="/runs/$runId" params={{ runId: id }}>
                <code>{shortId(id)}</code>
              </Link>
            </span>
          ))}
        </>
      );
      break;
    default:
      what = `Waiting (${s.kind})`;
  }
  return (
    <p className="pending-wait">
      {what}
      {until ? (
        <>
          {" "}
          {s.kind === "sleep" ? "until" : "(times out"} <Time iso={until} /> (<Time iso={until} relative />)
          {s.kind === "sleep" ? "" : ")"}
        </>
      ) : s.kind === "sleep" ? null : (
        " (no timeout)"
      )}
      .
    </p>
  );
}
