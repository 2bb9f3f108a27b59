import { useQuery } from "@tanstack/react-query";
import { get } from "../api";
import { DataTable } from "../components/data-table";
import { ErrorMessage } from "../components/error-message";
import { PageHeading } from "../components/page-heading";
import { Time } from "../components/time";
import { shortId } from "../format";
import type { Page, QueueState, Worker } from "../types";

const REFRESH_MS = 3000;
const ORDER = { online: 0, draining: 1, offline: 2 } as const;

export function WorkersPage() {
  const workers = useQuery({
    queryKey: ["workers"],
    queryFn: () => get<Page<"workers", Worker>>("/workers", { limit: 500 }),
    refetchInterval: REFRESH_MS,
  });
  const queues = useQuery({
    queryKey: ["queues"],
    queryFn: () => get<Page<"queues", QueueState>>("/queues", { limit: 500 }),
    refetchInterval: REFRESH_MS,
  });
  // Online first; the API lists oldest first, and old offline workers pile up.
  const rows = [...(workers.data?.workers ?? [])].sort(
    (a, b) => ORDER[a.status] - ORDER[b.status] || b.last_heartbeat_at.localeCompare(a.last_heartbeat_at),
  );
  const online = rows.filter((w) => w.status === "online").length;

  return (
    <>
      <PageHeading title="Workers and queues" />
      <section aria-labelledby="workers-h">
        <div className="section-head">
          <h2 id="workers-h">Workers</h2>
          <span className="muted">
            {online} online of {rows.length} · refreshes every 3 s
          </span>
        </div>
        <ErrorMessage error={workers.error} />
        {workers.isSuccess && rows.length === 0 ? <p>No worker has registered yet.</p> : null}
        {rows.length > 0 ? (
          <DataTable
            rows={rows}
            rowKey={(w) => w.id}
            columns={[
              {
                label: "Worker",
                cell: (w) => (
                  <>
                    {w.hostname ?? "unnamed"} <code className="muted">{shortId(w.id)}</code>
                  </>
                ),
              },
              { label: "Status", cell: (w) => <span className={`badge badge-${w.status}`}>{w.status}</span> },
              {
                label: "Running",
                cell: (w) =>
                  `${w.running_executions}${w.max_concurrent_executions ? ` of ${w.max_concurrent_executions}` : ""}`,
              },
              { label: "Deployment", cell: (w) => w.deployment_id },
              { label: "Mode", cell: (w) => w.mode },
              { label: "Last heartbeat", cell: (w) => <Time iso={w.last_heartbeat_at} relative /> },
              {
                label: "Serves",
                cell: (w) => (
                  <details>
                    <summary>
                      {(w.capabilities.workflow_ids ?? []).length} workflows on{" "}
                      {(w.capabilities.queues ?? []).length} queues
                    </summary>
                    <p>Workflows: {(w.capabilities.workflow_ids ?? []).join(", ") || "none"}</p>
                    <p>Queues: {(w.capabilities.queues ?? []).join(", ") || "none"}</p>
                  </details>
                ),
              },
            ]}
          />
        ) : null}
      </section>

      <section aria-labelledby="queues-h">
        <h2 id="queues-h">Queues</h2>
        <ErrorMessage error={queues.error} />
        {queues.isSuccess && queues.data.queues.length === 0 ? <p className="muted">No queues.</p> : null}
        {queues.data?.queues.length ? (
          <DataTable
            rows={queues.data.queues}
            rowKey={(q) => q.name}
            columns={[
              { label: "Queue", cell: (q) => q.name },
              { label: "Queued", cell: (q) => q.queued },
              { label: "Running", cell: (q) => q.running },
              { label: "Waiting for a slot", cell: (q) => q.waiting_for_slot },
              {
                label: "Limit",
                cell: (q) => (q.concurrency_limit === null ? "none" : `${q.concurrency_limit} per key`),
              },
              {
                label: "Consumers",
                cell: (q) => (
                  <>
                    {q.consumers}
                    {q.consumers === 0 && q.queued > 0 ? (
                      <span className="warn-text"> · no worker takes these runs</span>
                    ) : null}
                  </>
                ),
              },
            ]}
          />
        ) : null}
      </section>
    </>
  );
}
