import { useQuery } from "@tanstack/react-query";
import { get } from "../api";
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
          <div className="table-wrap">
            <table className="stack-on-phone">
              <thead>
                <tr>
                  <th scope="col">Worker</th>
                  <th scope="col">Status</th>
                  <th scope="col">Running</th>
                  <th scope="col">Deployment</th>
                  <th scope="col">Mode</th>
                  <th scope="col">Last heartbeat</th>
                  <th scope="col">Serves</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((w) => (
                  <tr key={w.id}>
                    <td data-label="Worker">
                      {w.hostname ?? "unnamed"} <code className="muted">{shortId(w.id)}</code>
                    </td>
                    <td data-label="Status">
                      <span className={`badge badge-${w.status}`}>{w.status}</span>
                    </td>
                    <td data-label="Running">
                      {w.running_executions}
                      {w.max_concurrent_executions ? ` of ${w.max_concurrent_executions}` : ""}
                    </td>
                    <td data-label="Deployment">{w.deployment_id}</td>
                    <td data-label="Mode">{w.mode}</td>
                    <td data-label="Last heartbeat">
                      <Time iso={w.last_heartbeat_at} relative />
                    </td>
                    <td data-label="Serves">
                      <details>
                        <summary>
                          {(w.capabilities.workflow_ids ?? []).length} workflows on{" "}
                          {(w.capabilities.queues ?? []).length} queues
                        </summary>
                        <p>Workflows: {(w.capabilities.workflow_ids ?? []).join(", ") || "none"}</p>
                        <p>Queues: {(w.capabilities.queues ?? []).join(", ") || "none"}</p>
                      </details>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : null}
      </section>

      <section aria-labelledby="queues-h">
        <h2 id="queues-h">Queues</h2>
        <ErrorMessage error={queues.error} />
        {queues.isSuccess && queues.data.queues.length === 0 ? <p className="muted">No queues.</p> : null}
        {queues.data?.queues.length ? (
          <div className="table-wrap">
            <table className="stack-on-phone">
              <thead>
                <tr>
                  <th scope="col">Queue</th>
                  <th scope="col">Queued</th>
                  <th scope="col">Running</th>
                  <th scope="col">Waiting for a slot</th>
                  <th scope="col">Limit</th>
                  <th scope="col">Consumers</th>
                </tr>
              </thead>
              <tbody>
                {queues.data.queues.map((q) => (
                  <tr key={q.name}>
                    <td data-label="Queue">{q.name}</td>
                    <td data-label="Queued">{q.queued}</td>
                    <td data-label="Running">{q.running}</td>
                    <td data-label="Waiting for a slot">{q.waiting_for_slot}</td>
                    <td data-label="Limit">
                      {q.concurrency_limit === null ? "none" : `${q.concurrency_limit} per key`}
                    </td>
                    <td data-label="Consumers">
                      {q.consumers}
                      {q.consumers === 0 && q.queued > 0 ? (
                        <span className="warn-text"> · no worker takes these runs</span>
                      ) : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : null}
      </section>
    </>
  );
}
