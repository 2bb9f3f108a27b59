import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useNavigate } from "@tanstack/react-router";
import { request } from "../api";
import { type Execution, isTerminal } from "../types";
import { ConfirmButton } from "./confirm-button";
import { ErrorMessage } from "./error-message";

/** Cancel a run that is not finished; start a new run of the same workflow with the same input. */
export function RunActions({ run }: { run: Execution }) {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const cancel = useMutation({
    mutationFn: () => request("POST", `/executions/${run.id}/cancel`),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["run", run.id] }),
  });
  const again = useMutation({
    mutationFn: () =>
      request<{ execution_id: string }>("POST", `/workflows/${encodeURIComponent(run.workflow_id)}/run`, {
        // `input` takes an object; any other JSON a run was started with goes back as `payload`.
        body:
          typeof run.input === "object" && run.input !== null && !Array.isArray(run.input)
            ? { input: run.input }
            : { payload: run.input },
      }),
    onSuccess: ({ execution_id }) => navigate({ to: "/runs/$runId", params: { runId: execution_id } }),
  });

  return (
    <section aria-label="Actions" className="actions">
      {!isTerminal(run.status) ? (
        <ConfirmButton
          label="Cancel run"
          question="Cancel this run and its unfinished child runs?"
          confirmLabel="Yes, cancel it"
          pending={cancel.isPending}
          onConfirm={() => cancel.mutate()}
        />
      ) : null}
      <button type="button" disabled={again.isPending} onClick={() => again.mutate()}>
        {again.isPending ? "Starting…" : "Run again with the same input"}
      </button>
      <ErrorMessage error={cancel.error ?? again.error} />
    </section>
  );
}
