import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { getRouteApi, Link, useNavigate } from "@tanstack/react-router";
import { type FormEvent, useState } from "react";
import { get } from "../api";
import { DataTable } from "../components/data-table";
import { ErrorMessage } from "../components/error-message";
import { PageHeading } from "../components/page-heading";
import { StatusBadge } from "../components/status-badge";
import { Time } from "../components/time";
import { elapsedMs, formatDuration, isUuid, shortId } from "../format";
import type { RunsSearch } from "../router";
import { type Execution, isTerminal, type Page, STATUSES, type Workflow } from "../types";

const route = getRouteApi("/app/runs");

/** How often the list refreshes itself. */
const LIVE_MS = 2000;
const PAGE_SIZE = 50;

/** datetime-local text (local time) ↔ the RFC 3339 instant the API filters on. */
const toInstant = (local: string) => (local ? new Date(local).toISOString() : undefined);
function toLocalInput(iso: string | undefined) {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function RunsPage() {
  const search = route.useSearch();
  const navigate = useNavigate();
  const setFilter = (patch: Partial<RunsSearch>) =>
    navigate({ to: "/runs", search: (prev) => ({ ...prev, ...patch }) });
  const filtered = Object.values(search).some(Boolean);

  return (
    <>
      <PageHeading title="Runs" />
      <OpenRunById />
      <form className="filters" aria-label="Filter runs" onSubmit={(e) => e.preventDefault()}>
        <WorkflowSelect value={search.workflow_id} onChange={(workflow_id) => setFilter({ workflow_id })} />
        <div className="field">
          <label htmlFor="filter-status">Status</label>
          <select
            id="filter-status"
            value={search.status ?? ""}
            onChange={(e) => setFilter({ status: STATUSES.find((s) => s === e.target.value) })}
          >
            <option value="">Any status</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
        <InstantFilter
          id="filter-after"
          label="Created after"
          value={search.created_after}
          onChange={(created_after) => setFilter({ created_after })}
        />
        <InstantFilter
          id="filter-before"
          label="Created before"
          value={search.created_before}
          onChange={(created_before) => setFilter({ created_before })}
        />
        {search.parent_execution_id ? (
          <p className="filter-note">
            Child runs of{" "}
            <Link to="/runs/$runId" params={{ runId: search.parent_execution_id }}>
              <code>{shortId(search.parent_execution_id)}</code>
            </Link>
          </p>
        ) : null}
        {filtered ? (
          <button type="button" onClick={() => navigate({ to: "/runs", search: {} })}>
            Clear filters
          </button>
        ) : null}
      </form>
      {/* A new filter starts again at the first page. */}
      <RunsTable key={JSON.stringify(search)} search={search} />
    </>
  );
}

function WorkflowSelect({ value, onChange }: { value?: string; onChange: (v: string | undefined) => void }) {
  const workflows = useQuery({
    queryKey: ["workflows"],
    queryFn: () => get<Page<"workflows", Workflow>>("/workflows", { limit: 500 }),
    staleTime: 30_000,
  });
  const ids = workflows.data?.workflows.map((w) => w.workflow_id) ?? [];
  // A filter on a workflow no longer registered still shows as chosen.
  if (value && !ids.includes(value)) ids.unshift(value);
  return (
    <div className="field">
      <label htmlFor="filter-workflow">Workflow</label>
      <select
        id="filter-workflow"
        value={value ?? ""}
        onChange={(e) => onChange(e.target.value || undefined)}
      >
        <option value="">Any workflow</option>
        {ids.map((id) => (
          <option key={id} value={id}>
            {id}
          </option>
        ))}
      </select>
    </div>
  );
}

function OpenRunById() {
  const navigate = useNavigate();
  const [id, setId] = useState("");
  const [invalid, setInvalid] = useState<string | null>(null);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const runId = id.trim().toLowerCase();
    if (!isUuid(runId)) {
      setInvalid("A run id is a UUID, like 0b6f5c9e-6d1c-4f5e-9d6b-2f0d1e6a7c11.");
      return;
    }
    setInvalid(null);
    void navigate({ to: "/runs/$runId", params: { runId } });
  };
  return (
    <search aria-label="Find a run by id">
      <form className="inline-form" onSubmit={submit}>
        <div className="field">
          <label htmlFor="run-id">Run id</label>
          <input
            id="run-id"
            value={id}
            onChange={(e) => setId(e.target.value)}
            placeholder="exact execution id"
            aria-invalid={invalid ? true : undefined}
            aria-describedby={invalid ? "run-id-error" : undefined}
            spellCheck={false}
          />
        </div>
        <button type="submit">Open run</button>
        {invalid ? (
          <p className="error" role="alert" id="run-id-error">
            {invalid}
          </p>
        ) : null}
      </form>
    </search>
  );
}

/** One page of runs at a time (keyset paging): fast however many runs the project has. */
function RunsTable({ search }: { search: RunsSearch }) {
  // The cursors of the pages before this one, so "Newer" can go back.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors.at(-1);
  const runs = useQuery({
    queryKey: ["runs", search, cursor],
    queryFn: ({ signal }) =>
      get<Page<"executions", Execution>>("/executions", { ...search, limit: PAGE_SIZE, cursor }, signal),
    refetchInterval: LIVE_MS,
    placeholderData: keepPreviousData,
  });
  const rows = runs.data?.executions ?? [];
  const next = runs.data?.next_cursor ?? null;

  return (
    <section aria-labelledby="runs-list">
      <div className="section-head">
        <h2 id="runs-list">{cursors.length === 1 ? "Latest runs" : `Runs, page ${cursors.length}`}</h2>
        <span className="muted live-note">Refreshes every 2 s</span>
      </div>
      <ErrorMessage error={runs.error} />
      {runs.isPending ? <p>Loading runs…</p> : null}
      {runs.isSuccess && rows.length === 0 ? <p>No runs match.</p> : null}
      {rows.length > 0 ? (
        <DataTable
          rows={rows}
          rowKey={(r) => r.id}
          columns={[
            {
              label: "Run",
              cell: (r) => (
                <Link
                  to="/runs/$runId"
                  params={{ runId: r.id }}
                  aria-label={`Run ${r.id} of ${r.workflow_id}`}
                >
                  <code>{shortId(r.id)}</code>
                </Link>
              ),
            },
            { label: "Workflow", cell: (r) => r.workflow_id },
            {
              label: "Status",
              cell: (r) => (
                <>
                  <StatusBadge status={r.status} />
                  {r.blocked ? <span className="muted"> ({r.blocked.reason.replace("_", " ")})</span> : null}
                </>
              ),
            },
            { label: "Created", cell: (r) => <Time iso={r.created_at} relative /> },
            {
              label: "Duration",
              cell: (r) =>
                `${r.started_at ? formatDuration(elapsedMs(r.started_at, r.completed_at ?? r.cancelled_at)) : "—"}${
                  r.started_at && !isTerminal(r.status) ? " so far" : ""
                }`,
            },
            { label: "Attempt", cell: (r) => r.attempt },
          ]}
        />
      ) : null}
      <nav className="pager" aria-label="Pages of runs">
        <button
          type="button"
          disabled={cursors.length === 1}
          onClick={() => setCursors((c) => c.slice(0, -1))}
        >
          ← Newer
        </button>
        <button type="button" disabled={!next} onClick={() => next && setCursors((c) => [...c, next])}>
          Older →
        </button>
      </nav>
    </section>
  );
}

/** A point in time to filter on, typed in local time and kept as an instant. */
function InstantFilter(p: {
  id: string;
  label: string;
  value: string | undefined;
  onChange: (instant: string | undefined) => void;
}) {
  return (
    <div className="field">
      <label htmlFor={p.id}>{p.label}</label>
      <input
        id={p.id}
        type="datetime-local"
        value={toLocalInput(p.value)}
        onChange={(e) => p.onChange(toInstant(e.target.value))}
      />
    </div>
  );
}
