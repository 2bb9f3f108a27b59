import { useMutation, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { request } from "../api";
import type { Execution } from "../types";
import { ErrorMessage } from "./error-message";
import { JsonEditor, useJsonObjectField } from "./json-editor";
import { JsonView } from "./json-view";

/** What a tool with approval "always" shows while it waits (packages/engine/src/runtime/tool-step.ts). */
interface ToolApproval {
  type: "tool_approval";
  tool_id: string;
  step_key: string;
  input: unknown;
}

const isToolApproval = (d: unknown): d is ToolApproval =>
  typeof d === "object" && d !== null && (d as { type?: unknown }).type === "tool_approval";

function useResume(run: Execution) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (data: Record<string, unknown>) =>
      request("POST", `/executions/${run.id}/resume`, { body: { data } }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["run", run.id] }),
  });
}

/** A suspended run waits for a person: approve or reject a tool call, or answer with JSON. */
export function ResumeForm({ run }: { run: Execution }) {
  return (
    <section aria-labelledby="resume-h" className="card attention">
      <h2 id="resume-h">{isToolApproval(run.suspended_data) ? "Approve the tool call" : "Resume the run"}</h2>
      {isToolApproval(run.suspended_data) ? (
        <ToolApprovalForm run={run} request={run.suspended_data} />
      ) : (
        <GenericResumeForm run={run} />
      )}
    </section>
  );
}

function ToolApprovalForm({ run, request: call }: { run: Execution; request: ToolApproval }) {
  const resume = useResume(run);
  const [feedback, setFeedback] = useState("");
  const reject = (e: FormEvent) => {
    e.preventDefault();
    resume.mutate({ approved: false, feedback });
  };
  return (
    <>
      <p>
        The agent wants to call the tool <strong>{call.tool_id}</strong> (step <code>{call.step_key}</code>).
        It runs only if you approve; if you reject, the model is told why.
      </p>
      <h3>Tool input</h3>
      <JsonView value={call.input} />
      <form onSubmit={reject}>
        <div className="field">
          <label htmlFor="reject-feedback">Feedback for the model (when you reject)</label>
          <textarea
            id="reject-feedback"
            rows={2}
            value={feedback}
            onChange={(e) => setFeedback(e.target.value)}
          />
        </div>
        <div className="actions">
          <button
            type="button"
            className="primary"
            disabled={resume.isPending}
            onClick={() => resume.mutate({ approved: true })}
          >
            Approve
          </button>
          <button type="submit" className="danger" disabled={resume.isPending}>
            Reject with feedback
          </button>
        </div>
      </form>
      <ErrorMessage error={resume.error} />
    </>
  );
}

function GenericResumeForm({ run }: { run: Execution }) {
  const resume = useResume(run);
  const data = useJsonObjectField("{\n  \n}", "The resume data");
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const value = data.parse();
    if (value) resume.mutate(value);
  };
  return (
    <form onSubmit={submit}>
      <p>
        The run is suspended
        {run.suspended_step_key ? (
          <>
            {" "}
            on step <code>{run.suspended_step_key}</code>
          </>
        ) : null}
        . What it shows:
      </p>
      <JsonView value={run.suspended_data} />
      <JsonEditor
        id="resume-data"
        label="Resume data (JSON object)"
        {...data.editor}
        rows={4}
        hint={'The suspended step returns this object, e.g. {"approved": true}.'}
      />
      <ErrorMessage error={resume.error} />
      <button type="submit" className="primary" disabled={resume.isPending}>
        {resume.isPending ? "Resuming…" : "Resume"}
      </button>
    </form>
  );
}
