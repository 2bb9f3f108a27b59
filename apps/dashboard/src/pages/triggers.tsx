import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link } from "@tanstack/react-router";
import { get, request } from "../api";
import { ConfirmButton } from "../components/confirm-button";
import { DataTable } from "../components/data-table";
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
        <DataTable
          rows={rows}
          rowKey={(t) => t.id}
          columns={[
            {
              label: "Workflow",
              cell: (t) => (
                <Link to="/runs" search={{ workflow_id: t.workflow_id }}>
                  {t.workflow_id}
                </Link>
              ),
            },
            {
              label: "Topic",
              cell: (t) => (
                <Link to="/events" search={{ topic: t.event_topic }}>
                  {t.event_topic}
                </Link>
              ),
            },
            {
              label: "Batch",
              cell: (t) =>
                `${t.batch_size} ${t.batch_size === 1 ? "event" : "events"}${
                  t.batch_timeout_seconds ? ` or ${t.batch_timeout_seconds} s` : ""
                }`,
            },
            { label: "Queue", cell: (t) => t.queue_name ?? "the workflow's" },
            {
              label: "Status",
              cell: (t) => (
                <>
                  <span className={`badge badge-${t.status}`}>{t.status}</span>
                  {t.status === "paused" && !t.paused_by_user ? (
                    <div className="muted">no worker registers its workflow</div>
                  ) : null}
                </>
              ),
            },
            { label: "Batched up to", cell: (t) => `sequence ${t.last_sequence_id}` },
            {
              label: "Actions",
              hideLabel: true,
              className: "row-actions",
              cell: (t) => (
                <>
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
                </>
              ),
            },
          ]}
        />
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
        <DataTable
          rows={rows}
          rowKey={(s) => s.id}
          columns={[
            {
              label: "Workflow",
              cell: (s) => (
                <Link to="/runs" search={{ workflow_id: s.workflow_id }}>
                  {s.workflow_id}
                </Link>
              ),
            },
            { label: "Key", cell: (s) => s.key },
            {
              label: "Cron",
              cell: (s) => (
                <>
                  <code>{s.cron}</code> <span className="muted">({s.timezone})</span>
                </>
              ),
            },
            { label: "Status", cell: (s) => <span className={`badge badge-${s.status}`}>{s.status}</span> },
            {
              label: "Next run",
              cell: (s) =>
                s.status === "paused" ? (
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
                ),
            },
            { label: "Last run", cell: (s) => <Time iso={s.last_run_at} relative /> },
            { label: "Overlap", cell: (s) => s.overlap_policy.replace("_", " ") },
            {
              label: "Actions",
              hideLabel: true,
              className: "row-actions",
              cell: (s) => (
                <>
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
                </>
              ),
            },
          ]}
        />
      ) : null}
    </section>
  );
}
