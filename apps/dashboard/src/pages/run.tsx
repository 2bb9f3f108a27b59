import { useQuery, useQueryClient } from "@tanstack/react-query";
import { getRouteApi, Link } from "@tanstack/react-router";
import { useEffect, useRef } from "react";
import { get } from "../api";
import { ChildRuns } from "../components/child-runs";
import { ErrorMessage } from "../components/error-message";
import { JsonView } from "../components/json-view";
import { PageHeading } from "../components/page-heading";
import { ResumeForm } from "../components/resume-form";
import { RunActions } from "../components/run-actions";
import { RunStream } from "../components/run-stream";
import { StatusBadge } from "../components/status-badge";
import { StepsTimeline } from "../components/steps-timeline";
import { Time } from "../components/time";
import { TraceWaterfall } from "../components/trace-waterfall";
import { elapsedMs, formatDuration } from "../format";
import { type Execution, isTerminal, traceIdOf } from "../types";

const route = getRouteApi("/app/runs/$runId");

/** While a run is not finished, it and its parts are read again this often. */
const LIVE_MS = 2000;

export function RunPage() {
  const { runId } = route.useParams();
  // Another run (run again, a child's link) starts afresh: no form text or stream carries over.
  return <RunView key={runId} runId={runId} />;
}

function RunView({ runId }: { runId: string }) {
  const run = useQuery({
    queryKey: ["run", runId],
    queryFn: ({ signal }) => get<Execution>(`/executions/${encodeURIComponent(runId)}`, undefined, signal),
    refetchInterval: (q) => (q.state.data && isTerminal(q.state.data.status) ? false : LIVE_MS),
  });
  const e = run.data;
  const live = e ? !isTerminal(e.status) : false;
  useFinalRefresh(e, live);

  return (
    <>
      <PageHeading title={e ? `Run of ${e.workflow_id}` : "Run"}>
        {e ? <StatusBadge status={e.status} /> : null}
      </PageHeading>
      <p className="muted">
        <Link to="/runs">← All runs</Link> · <code className="wrap">{runId}</code>
      </p>
      <ErrorMessage error={run.error} />
      {run.isPending ? <p>Loading the run…</p> : null}
      {e ? (
        <>
          <StatusAnnouncer status={e.status} />
          <RunActions run={e} />
          {e.status === "suspended" ? <ResumeForm run={e} /> : null}
          {/* What the run is doing now (an agent's words) comes before its record. */}
          <RunStream run={e} />
          <RunSummary run={e} />
          <div className="two-col">
            <section aria-labelledby="input-h" className="card">
              <h2 id="input-h">Input</h2>
              <JsonView value={e.input} />
            </section>
            <section aria-labelledby="outcome-h" className="card">
              <h2 id="outcome-h">{e.error ? "Error" : "Result"}</h2>
              {e.error ? (
                <div className="error-box">
                  <p>
                    <strong>{e.error.name}</strong>: {e.error.message}
                  </p>
                  {e.error.step_key ? <p>In step {e.error.step_key}.</p> : null}
                  {e.status !== "failed" ? (
                    <p className="muted">This was the last attempt's error; the run goes on.</p>
                  ) : null}
                  {e.error.stack ? (
                    <details>
                      <summary>Stack</summary>
                      <pre className="json">{e.error.stack}</pre>
                    </details>
                  ) : null}
                </div>
              ) : e.status === "completed" ? (
                <JsonView value={e.result} />
              ) : (
                <p className="muted">Not finished yet.</p>
              )}
            </section>
          </div>
          <StepsTimeline run={e} live={live} />
          <ChildRuns run={e} live={live} />
          <TraceWaterfall run={e} live={live} />
        </>
      ) : null}
    </>
  );
}

/**
 * Steps, children and trace stop refreshing when the run ends; their last refresh may predate the
 * end, so they are read once more then (the API writes them before it reports the end).
 */
function useFinalRefresh(run: Execution | undefined, live: boolean) {
  const queryClient = useQueryClient();
  const wasLive = useRef(live);
  useEffect(() => {
    if (run && wasLive.current && !live) {
      for (const key of [
        ["steps", run.id],
        ["children", run.id],
        ["trace", traceIdOf(run)],
      ]) {
        void queryClient.invalidateQueries({ queryKey: key });
      }
    }
    wasLive.current = live;
  }, [run, live, queryClient]);
}

/** Says a change of status out loud once, not on every refresh. */
function StatusAnnouncer({ status }: { status: string }) {
  const first = useRef(status);
  const region = useRef<HTMLParagraphElement>(null);
  useEffect(() => {
    if (region.current && status !== first.current) region.current.textContent = `The run is now ${status}.`;
  }, [status]);
  return <p className="visually-hidden" aria-live="polite" ref={region} />;
}

function RunSummary({ run: e }: { run: Execution }) {
  const end = e.completed_at ?? e.cancelled_at;
  return (
    <section aria-labelledby="summary-h" className="card">
      <h2 id="summary-h" className="visually-hidden">
        Summary
      </h2>
      <dl className="summary">
        <div>
          <dt>Status</dt>
          <dd>
            <StatusBadge status={e.status} />
            {e.suspended_step_key ? <> on step {e.suspended_step_key}</> : null}
          </dd>
        </div>
        <div>
          <dt>Workflow</dt>
          <dd>
            <Link to="/runs" search={{ workflow_id: e.workflow_id }}>
              {e.workflow_id}
            </Link>
          </dd>
        </div>
        <div>
          <dt>Attempt</dt>
          <dd>{e.attempt}</dd>
        </div>
        <div>
          <dt>Created</dt>
          <dd>
            <Time iso={e.created_at} />
          </dd>
        </div>
        <div>
          <dt>Started</dt>
          <dd>
            <Time iso={e.started_at} />
          </dd>
        </div>
        <div>
          <dt>{e.cancelled_at ? "Cancelled" : "Finished"}</dt>
          <dd>
            <Time iso={end} />
          </dd>
        </div>
        <div>
          <dt>Duration</dt>
          <dd>{e.started_at ? formatDuration(elapsedMs(e.started_at, end)) : "—"}</dd>
        </div>
        <div>
          <dt>Queue</dt>
          <dd>
            {e.queue_name}
            {e.concurrency_key ? ` (key ${e.concurrency_key})` : ""}
          </dd>
        </div>
        <div>
          <dt>Deployment</dt>
          <dd>{e.deployment_id}</dd>
        </div>
        {e.parent_execution_id ? (
          <div>
            <dt>Parent run</dt>
            <dd>
              <Link to="/runs/$runId" params={{ runId: e.parent_execution_id }}>
                <code>{e.parent_execution_id}</code>
              </Link>
              {e.step_key ? ` (step ${e.step_key})` : ""}
            </dd>
          </div>
        ) : null}
        {e.root_execution_id &&
        e.root_execution_id !== e.id &&
        e.root_execution_id !== e.parent_execution_id ? (
          <div>
            <dt>Root run</dt>
            <dd>
              <Link to="/runs/$runId" params={{ runId: e.root_execution_id }}>
                <code>{e.root_execution_id}</code>
              </Link>
            </dd>
          </div>
        ) : null}
        {e.blocked ? (
          <div>
            <dt>Waiting to start</dt>
            <dd>
              {e.blocked.message} (since <Time iso={e.blocked.since} relative />)
            </dd>
          </div>
        ) : null}
      </dl>
    </section>
  );
}
