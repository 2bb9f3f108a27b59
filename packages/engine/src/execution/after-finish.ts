import type { Execution } from "@spool/db";
import type { EngineDeps } from "../deps.js";
import { syncExecution } from "../traces/record-spans.js";
import type { WorkflowKind } from "../traces/span-rows.js";
import { notifyParent } from "./notify-parent.js";

/** Channel on which a run that reached a terminal status is announced (payload: its id). */
export const FINISHED_CHANNEL = "spool:finished";

/**
 * What follows every terminal transition, after its commit: the parent waiting on this run wakes,
 * and clients waiting with `?wait=` are told (best effort: they also re-check on their own).
 * A run finished outside its worker (cancel, sweep, timeout) also gets its trace brought up to
 * date here; a worker syncs the trace of the runs it finishes itself.
 */
export async function afterFinish(
  deps: EngineDeps,
  execution: Execution,
  options: { byWorker: boolean },
): Promise<void> {
  await notifyParent(deps, execution);
  await deps.redis.publish(FINISHED_CHANNEL, execution.id).catch(() => {});
  if (!options.byWorker) await syncTrace(deps, execution);
}

export async function syncTrace(deps: EngineDeps, execution: Execution): Promise<void> {
  try {
    const registration = await deps.prisma.workflowRegistration.findFirst({
      where: {
        projectId: execution.projectId,
        workflowId: execution.workflowId,
        deploymentId: execution.deploymentId,
      },
      select: { workflowType: true },
    });
    await syncExecution(
      deps.prisma,
      execution.id,
      (registration?.workflowType ?? "workflow") as WorkflowKind,
    );
  } catch (err) {
    // A trace is a view of the run; failing to refresh it must not fail the transition.
    deps.logger.warn({ execution_id: execution.id, err: String(err) }, "trace sync failed");
  }
}
