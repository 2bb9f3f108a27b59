import type { Execution, Prisma } from "@spool/db";
import { conflict } from "@spool/shared";
import type { EngineDeps } from "../deps.js";
import type { DispatchRequest } from "../dispatch/dispatcher.js";
import type { SpanRow } from "../traces/span-rows.js";
import { createExecutions, type RunRequest } from "./create-executions.js";
import { lockProjectExecution } from "./lock.js";
import { nextSeq } from "./next-seq.js";
import { transition } from "./transition.js";

/** Child runs a running parent waits for, started through the run routes (a remote worker's invoke). */
export interface WaitedChildren {
  parentExecutionId: string;
  stepKey: string;
  /** batch_run: the step's result is the array of every child's outcome, in request order. */
  batch: boolean;
}

/** The waited children a run request names, if it names any (`wait_for_subworkflow` with a step key). */
export function waitedChildrenOf(requests: RunRequest[], batch: boolean): WaitedChildren | null {
  const first = requests[0];
  if (!first?.waitForSubworkflow || !first.stepKey || !first.parentExecutionId) return null;
  const same = requests.every(
    (r) =>
      r.waitForSubworkflow && r.stepKey === first.stepKey && r.parentExecutionId === first.parentExecutionId,
  );
  if (!same) throw conflict("a batch a parent waits for needs one parent_execution_id and one step_key");
  return { parentExecutionId: first.parentExecutionId, stepKey: first.stepKey, batch };
}

/**
 * Inside the caller's transaction: starts children their parent waits for, stores the parent's
 * wait on them under `stepKey` and parks the parent (running → waiting). The worker that ran the
 * parent reports nothing more for this turn (the protocol's invokeAndWait); when the children are
 * done, their outcome becomes the step's result and the parent is queued again (notify-parent.ts).
 * A repeated request (the SDK retries one whose answer it lost) returns the children it started
 * (`created` then holds none: they were counted when they were).
 */
export async function startWaitedChildren(
  deps: EngineDeps,
  tx: Prisma.TransactionClient,
  projectId: string,
  waited: WaitedChildren,
  requests: RunRequest[],
): Promise<{
  executions: Execution[];
  created: Execution[];
  dispatch: DispatchRequest[];
  parent: Execution | null;
  spans: SpanRow[];
}> {
  const parent = await lockProjectExecution(tx, projectId, waited.parentExecutionId);
  const existing = await tx.wait.findUnique({
    where: { executionId_stepKey: { executionId: parent.id, stepKey: waited.stepKey } },
  });
  if (existing) {
    if (existing.kind !== "invoke")
      throw conflict(`step '${waited.stepKey}' of the parent is not a child run`);
    const ids = existing.childExecutionId ? [existing.childExecutionId] : existing.childExecutionIds;
    const found = await tx.execution.findMany({ where: { id: { in: ids } } });
    const byId = new Map(found.map((e) => [e.id, e]));
    const executions = ids.flatMap((id) => byId.get(id) ?? []);
    return { executions, created: [], dispatch: [], parent: null, spans: [] };
  }
  if (parent.status !== "running") {
    throw conflict(`parent execution is ${parent.status}; only a running parent can wait for children`, {
      status: parent.status,
    });
  }
  const { executions, dispatch } = await createExecutions(
    tx,
    projectId,
    requests,
    deps.limits.maxQueuesPerProject,
  );
  const ids = executions.map((e) => e.id);
  await tx.wait.create({
    data: {
      projectId,
      executionId: parent.id,
      stepKey: waited.stepKey,
      seq: await nextSeq(tx, parent.id),
      kind: "invoke",
      childExecutionId: waited.batch ? null : (ids[0] ?? null),
      childExecutionIds: waited.batch ? ids : [],
    },
  });
  const parked = await transition(tx, {
    executionId: parent.id,
    from: ["running"],
    to: "waiting",
    data: { workerId: null, suspendedStepKey: null },
  });
  const spans = parked ? await deps.traces.syncInTransaction(tx, parked) : [];
  return { executions, created: executions, dispatch, parent: parked, spans };
}
