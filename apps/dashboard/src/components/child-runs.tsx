import { useQuery } from "@tanstack/react-query";
import { Link } from "@tanstack/react-router";
import { get } from "../api";
import { shortId } from "../format";
import type { Execution, Page } from "../types";
import { ErrorMessage } from "./error-message";
import { StatusBadge } from "./status-badge";
import { Time } from "./time";

/** The runs this run started (ctx.step.invoke, ctx.step.agent), found by their parent id. */
export function ChildRuns({ run, live }: { run: Execution; live: boolean }) {
  const children = useQuery({
    queryKey: ["children", run.id],
    queryFn: ({ signal }) =>
      get<Page<"executions", Execution>>("/executions", { parent_execution_id: run.id, limit: 100 }, signal),
    refetchInterval: live ? 2000 : false,
  });
  const rows = children.data?.executions ?? [];
  if (children.isSuccess && rows.length === 0) return null;
  return (
    <section aria-labelledby="children-h" className="card">
      <h2 id="children-h">Child runs</h2>
      <ErrorMessage error={children.error} />
      <ul className="plain-list">
        {rows.map((c) => (
          <li key={c.id}>
            <Link to="/runs/$runId" params={{ runId: c.id }}>
              {c.workflow_id} <code>{shortId(c.id)}</code>
            </Link>{" "}
            <StatusBadge status={c.status} />
            {c.step_key ? <span className="muted"> from step {c.step_key}</span> : null}{" "}
            <span className="muted">
              created <Time iso={c.created_at} relative />
            </span>
          </li>
        ))}
      </ul>
      {children.data?.next_cursor ? (
        <p>
          Showing the first 100.{" "}
          <Link to="/runs" search={{ parent_execution_id: run.id }}>
            All child runs
          </Link>
        </p>
      ) : null}
    </section>
  );
}
