import { useQuery } from "@tanstack/react-query";
import { getRouteApi, Link } from "@tanstack/react-router";
import { useState } from "react";
import { get } from "../api";
import { DataTable } from "../components/data-table";
import { ErrorMessage } from "../components/error-message";
import { PageHeading } from "../components/page-heading";
import { RunWorkflowForm } from "../components/run-workflow-form";
import { Time } from "../components/time";
import { shortId } from "../format";
import type { Agent, Deployment, Page, Tool, Worker, Workflow } from "../types";

const route = getRouteApi("/app/workflows");

/** The online workers that serve an id, as their capabilities say. */
function servedBy(
  workers: Worker[] | undefined,
  id: string,
  kind: "workflow_ids" | "agent_ids" | "tool_ids",
) {
  return (workers ?? []).filter((w) => w.status === "online" && (w.capabilities[kind] ?? []).includes(id));
}

function ServedBy({ workers }: { workers: Worker[] }) {
  if (workers.length === 0) return <span className="warn-text">No online worker</span>;
  return (
    <span title={workers.map((w) => w.hostname ?? w.id).join(", ")}>
      {workers.length} online {workers.length === 1 ? "worker" : "workers"} (
      {workers
        .slice(0, 3)
        .map((w) => w.hostname ?? shortId(w.id))
        .join(", ")}
      {workers.length > 3 ? ", …" : ""})
    </span>
  );
}

export function WorkflowsPage() {
  const search = route.useSearch();
  const [selected, setSelected] = useState(search.run ?? "");
  const list = <T,>(key: string, path: string) => ({
    queryKey: [key],
    queryFn: () => get<T>(path, { limit: 500 }),
    refetchInterval: 10_000,
  });
  const workflows = useQuery(list<Page<"workflows", Workflow>>("workflows", "/workflows"));
  const agents = useQuery(list<Page<"agents", Agent>>("agents", "/agents"));
  const tools = useQuery(list<Page<"tools", Tool>>("tools", "/tools"));
  const deployments = useQuery(list<Page<"deployments", Deployment>>("deployments", "/deployments"));
  const workers = useQuery(list<Page<"workers", Worker>>("workers", "/workers"));
  const w = workers.data?.workers;

  const chooseToRun = (id: string) => {
    setSelected(id);
    // The form is above the tables: take the user (and focus) to its input.
    requestAnimationFrame(() => document.getElementById("run-input")?.focus());
  };

  return (
    <>
      <PageHeading title="Workflows, agents and tools" />
      <RunWorkflowForm
        workflows={workflows.data?.workflows ?? []}
        selected={selected}
        onSelect={setSelected}
      />

      <section aria-labelledby="workflows-h">
        <h2 id="workflows-h">Workflows</h2>
        <ErrorMessage error={workflows.error ?? workers.error} />
        {workflows.isPending ? <p>Loading…</p> : null}
        {workflows.data?.workflows.length === 0 ? (
          <p>No workflow is registered yet: start a worker.</p>
        ) : null}
        {workflows.data?.workflows.length ? (
          <DataTable
            rows={workflows.data.workflows}
            rowKey={(wf) => `${wf.deployment_id}/${wf.workflow_id}`}
            columns={[
              {
                label: "Workflow",
                cell: (wf) => (
                  <Link to="/runs" search={{ workflow_id: wf.workflow_id }} title="Its runs">
                    {wf.workflow_id}
                  </Link>
                ),
              },
              { label: "Kind", cell: (wf) => wf.workflow_type },
              { label: "Deployment", cell: (wf) => wf.deployment_id },
              { label: "Queue", cell: (wf) => wf.queue_name ?? "default" },
              {
                label: "Started by",
                cell: (wf) =>
                  [wf.trigger_on_event ? "events" : null, wf.scheduled ? "schedule" : null, "API"]
                    .filter(Boolean)
                    .join(", "),
              },
              {
                label: "Served by",
                cell: (wf) => <ServedBy workers={servedBy(w, wf.workflow_id, "workflow_ids")} />,
              },
              {
                label: "Actions",
                hideLabel: true,
                cell: (wf) => (
                  <button
                    type="button"
                    onClick={() => chooseToRun(wf.workflow_id)}
                    aria-label={`Run ${wf.workflow_id}…`}
                  >
                    Run…
                  </button>
                ),
              },
            ]}
          />
        ) : null}
      </section>

      <section aria-labelledby="agents-h">
        <h2 id="agents-h">Agents</h2>
        <ErrorMessage error={agents.error} />
        {agents.data?.agents.length === 0 ? <p className="muted">No agents registered.</p> : null}
        {agents.data?.agents.length ? (
          <DataTable
            rows={agents.data.agents}
            rowKey={(a) => `${a.deployment_id}/${a.id}`}
            columns={[
              {
                label: "Agent",
                cell: (a) => (
                  <>
                    <Link to="/runs" search={{ workflow_id: a.id }} title="Its runs">
                      {a.id}
                    </Link>
                    {a.system_prompt ? <div className="muted clamp">{a.system_prompt}</div> : null}
                  </>
                ),
              },
              {
                label: "Model",
                cell: (a) => (
                  <>
                    {a.model} <span className="muted">({a.provider})</span>
                  </>
                ),
              },
              {
                label: "Tools",
                cell: (a) =>
                  a.tools.map((t) => (typeof t === "string" ? t : JSON.stringify(t))).join(", ") || "none",
              },
              { label: "Deployment", cell: (a) => a.deployment_id },
              { label: "Served by", cell: (a) => <ServedBy workers={servedBy(w, a.id, "agent_ids")} /> },
            ]}
          />
        ) : null}
      </section>

      <section aria-labelledby="tools-h">
        <h2 id="tools-h">Tools</h2>
        <ErrorMessage error={tools.error} />
        {tools.data?.tools.length === 0 ? <p className="muted">No tools registered.</p> : null}
        {tools.data?.tools.length ? (
          <DataTable
            rows={tools.data.tools}
            rowKey={(t) => `${t.deployment_id}/${t.id}`}
            columns={[
              {
                label: "Tool",
                cell: (t) => (
                  <>
                    {t.id}
                    {t.parameters ? (
                      <details>
                        <summary>Input schema</summary>
                        <pre className="json">{JSON.stringify(t.parameters, null, 2)}</pre>
                      </details>
                    ) : null}
                  </>
                ),
              },
              { label: "Description", cell: (t) => t.description ?? "—" },
              {
                label: "Approval",
                cell: (t) => (t.metadata?.approval === "always" ? "needs approval" : "runs directly"),
              },
              { label: "Deployment", cell: (t) => t.deployment_id },
              { label: "Served by", cell: (t) => <ServedBy workers={servedBy(w, t.id, "tool_ids")} /> },
            ]}
          />
        ) : null}
      </section>

      <section aria-labelledby="deployments-h">
        <h2 id="deployments-h">Deployments</h2>
        <ErrorMessage error={deployments.error} />
        <ul className="plain-list">
          {deployments.data?.deployments.map((d) => (
            <li key={d.id}>
              <strong>{d.id}</strong> · {d.status} · registered <Time iso={d.created_at} relative /> ·{" "}
              {(w ?? []).filter((x) => x.deployment_id === d.id && x.status === "online").length} online
              workers
            </li>
          ))}
        </ul>
      </section>
    </>
  );
}
