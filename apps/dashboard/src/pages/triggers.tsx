import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link } from "@tanstack/react-router";
import { get, request } from "../api";
import { ConfirmButton } from "../components/confirm-button";
import { ErrorMessage } from "../components/error-message";
import { PageHeading } from "../components/page-heading";
import { Time } from "../components/time";
import type { Page, Schedule, Trigger } from "../types";

const REFRESH_MS = 5000;

export function TriggersPage() {
  return (
    <>
      <PageHeading title="Triggers and schedules" />
      <Triggers />
      <Schedules />
    </>
  );
}

function Triggers() {
  const queryClient = useQueryClient();
  const triggers = useQuery({
    queryKey: ["triggers"],
    queryFn: () => get<Page<"triggers", Trigger>>("/event-triggers", { limit: 500 }),
    refetchInterval: REFRESH_MS,
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: ["triggers"] });
  const setStatus = useMutation({
    mutationFn: (v: { id: string; status: "active" | "paused" }) =>
      request("PATCH", `/event-triggers/${v.id}`, { body: { status: v.status } }),
    onSuccess: refresh,
  });
  const remove = useMutation({
    mutationFn: (id: string) => request("DELETE", `/event-triggers/${id}`),
    onSuccess: refresh,
  });
  const rows = triggers.data?.triggers ?? [];
  return (
    <section aria-labelledby="triggers-h">
      <h2 id="triggers-h">Event triggers</h2>
      <p className="muted">
        Each starts its workflow with batches of a topic's events. A paused one keeps its place: what is
        published meanwhile is batched when it resumes.
      </p>
      <ErrorMessage error={triggers.error ?? setStatus.error ?? remove.error} />
      {triggers.isSuccess && rows.length === 0 ? <p className="muted">No event triggers.</p> : null}
      {rows.length > 0 ? (
        <div className="table-wrap">
          <table className="stack-on-phone">
            <thead>
              <tr>
                <th scope="col">Workflow</th>
                <th scope="col">Topic</th>
                <th scope="col">Batch</th>
                <th scope="col">Queue</th>
                <th scope="col">Status</th>
                <th scope="col">Batched up to</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((t) => (
                <tr key={t.id}>
                  <td data-label="Workflow">
                    <Link to="/runs" search={{ workflow_id: t.workflow_id }}>
                      {t.workflow_id}
                    </Link>
                  </td>
                  <td data-label="Topic">
                    <Link to="/events" search={{ topic: t.event_topic }}>
                      {t.event_topic}
                    </Link>
                  </td>
                  <td data-label="Batch">
                    {t.batch_size} {t.batch_size === 1 ? "event" : "events"}
                    {t.batch_timeout_seconds ? ` or ${t.batch_timeout_seconds} s` : ""}
                  </td>
                  <td data-label="Queue">{t.queue_name ?? "the workflow's"}</td>
                  <td data-label="Status">
                    <span className={`badge badge-${t.status}`}>{t.status}</span>
                    {t.status === "paused" && !t.paused_by_user ? (
                      <div className="muted">no worker registers its workflow</div>
                    ) : null}
                  </td>
                  <td data-label="Batched up to">sequence {t.last_sequence_id}</td>
                  <td data-label="Actions" className="row-actions">
                    <button
                      type="button"
                      disabled={setStatus.isPending}
                      onClick={() =>
                        setStatus.mutate({ id: t.id, status: t.status === "active" ? "paused" : "active" })
                      }
                      aria-label={`${t.status === "active" ? "Pause" : "Resume"} the trigger of ${t.workflow_id} on ${t.event_topic}`}
                    >
                      {t.status === "active" ? "Pause" : "Resume"}
                    </button>
                    <ConfirmButton
                      label="Delete"
                      question={`Delete the trigger of ${t.workflow_id} on ${t.event_topic}?`}
                      confirmLabel="Yes, delete"
                      pending={remove.isPending}
                      onConfirm={() => remove.mutate(t.id)}
                    />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}

function Schedules() {
  const queryClient = useQueryClient();
  const schedules = useQuery({
    queryKey: ["schedules"],
    queryFn: () => get<Page<"schedules", Schedule>>("/schedules", { limit: 500 }),
    refetchInterval: REFRESH_MS,
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: ["schedules"] });
  const setStatus = useMutation({
    mutationFn: (v: { id: string; status: "active" | "paused" }) =>
      request("PATCH", `/schedules/${v.id}`, { body: { status: v.status } }),
    onSuccess: refresh,
  });
  const remove = useMutation({
    mutationFn: (id: string) => request("DELETE", `/schedules/${id}`),
    onSuccess: refresh,
  });
  const rows = schedules.data?.schedules ?? [];
  return (
    <section aria-labelledby="schedules-h">
      <h2 id="schedules-h">Schedules</h2>
      <ErrorMessage error={schedules.error ?? setStatus.error ?? remove.error} />
      {schedules.isSuccess && rows.length === 0 ? <p className="muted">No schedules.</p> : null}
      {rows.length > 0 ? (
        <div className="table-wrap">
          <table className="stack-on-phone">
            <thead>
              <tr>
                <th scope="col">Workflow</th>
                <th scope="col">Key</th>
                <th scope="col">Cron</th>
                <th scope="col">Status</th>
                <th scope="col">Next run</th>
                <th scope="col">Last run</th>
                <th scope="col">Overlap</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((s) => (
                <tr key={s.id}>
                  <td data-label="Workflow">
                    <Link to="/runs" search={{ workflow_id: s.workflow_id }}>
                      {s.workflow_id}
                    </Link>
                  </td>
                  <td data-label="Key">{s.key}</td>
                  <td data-label="Cron">
                    <code>{s.cron}</code> <span className="muted">({s.timezone})</span>
                  </td>
                  <td data-label="Status">
                    <span className={`badge badge-${s.status}`}>{s.status}</span>
                  </td>
                  <td data-label="Next run">
                    {s.status === "paused" ? (
                      <span className="muted">paused</span>
                    ) : (
                      <>
                        <Time iso={s.next_run_at} />
                        {s.next_run_at ? (
                          <span className="muted">
                            {" "}
                            (<Time iso={s.next_run_at} relative />)
                          </span>
                        ) : null}
                      </>
                    )}
                  </td>
                  <td data-label="Last run">
                    <Time iso={s.last_run_at} relative />
                  </td>
                  <td data-label="Overlap">{s.overlap_policy.replace("_", " ")}</td>
                  <td data-label="Actions" className="row-actions">
                    <button
                      type="button"
                      disabled={setStatus.isPending}
                      onClick={() =>
                        setStatus.mutate({ id: s.id, status: s.status === "active" ? "paused" : "active" })
                      }
                      aria-label={`${s.status === "active" ? "Pause" : "Resume"} the schedule of ${s.workflow_id} (${s.key})`}
                    >
                      {s.status === "active" ? "Pause" : "Resume"}
                    </button>
                    <ConfirmButton
                      label="Delete"
                      question={`Delete the schedule of ${s.workflow_id} (${s.key})?`}
                      confirmLabel="Yes, delete"
                      pending={remove.isPending}
                      onConfirm={() => remove.mutate(s.id)}
                    />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}
