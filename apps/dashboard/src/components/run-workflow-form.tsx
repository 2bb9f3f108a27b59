import { useMutation } from "@tanstack/react-query";
import { useNavigate } from "@tanstack/react-router";
import type { FormEvent } from "react";
import { request } from "../api";
import type { Workflow } from "../types";
import { ErrorMessage } from "./error-message";
import { JsonEditor, useJsonObjectField } from "./json-editor";

interface Props {
  workflows: Workflow[];
  selected: string;
  onSelect: (id: string) => void;
}

/** Starts a run. The JSON is checked here first; what the API refuses is shown as it says it. */
export function RunWorkflowForm({ workflows, selected, onSelect }: Props) {
  const navigate = useNavigate();
  const input = useJsonObjectField("{}", "The input");
  const run = useMutation({
    mutationFn: (v: { workflowId: string; input: Record<string, unknown> }) =>
      request<{ execution_id: string }>("POST", `/workflows/${encodeURIComponent(v.workflowId)}/run`, {
        body: { input: v.input },
      }),
    onSuccess: ({ execution_id }) => navigate({ to: "/runs/$runId", params: { runId: execution_id } }),
  });
  const ids = [...new Set(workflows.map((w) => w.workflow_id))];

  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!selected) {
      input.refuse("Choose a workflow to run.");
      return;
    }
    const value = input.parse();
    if (value) run.mutate({ workflowId: selected, input: value });
  };

  return (
    <section aria-labelledby="run-h" className="card">
      <h2 id="run-h">Run a workflow</h2>
      <form onSubmit={submit}>
        <div className="field">
          <label htmlFor="run-workflow">Workflow</label>
          <select id="run-workflow" value={selected} onChange={(e) => onSelect(e.target.value)}>
            <option value="">Choose…</option>
            {ids.map((id) => (
              <option key={id} value={id}>
                {id}
              </option>
            ))}
          </select>
        </div>
        <JsonEditor
          id="run-input"
          label="Input (JSON object)"
          {...input.editor}
          rows={5}
          hint={'An agent takes {"message": "..."}.'}
        />
        <ErrorMessage error={run.error} />
        <button type="submit" className="primary" disabled={run.isPending}>
          {run.isPending ? "Starting…" : "Run"}
        </button>
      </form>
    </section>
  );
}
