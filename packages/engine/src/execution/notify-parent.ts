import type { Execution, Prisma, Wait } from "@spool/db";
import { isTerminal, type SerializedError } from "@spool/shared";
import type { EngineDeps } from "../deps.js";
import { TX_OPTIONS } from "../deps.js";
import { lockExecution } from "./lock.js";
import { resolveWait, type WaitOutcome } from "./resolve-wait.js";

/**
 * A child run reached a terminal status: its result (or error) becomes the parent's invoke step
 * result and the parent wakes; a batch's step settles once its last child finishes. Runs in its own
 * transaction after the child's, so lock order stays parent-before-child everywhere (cancel locks
 * parent then children); the sweep repairs a crash between the two.
 */
export async function notifyParent(deps: EngineDeps, child: Execution): Promise<void> {
  if (!child.parentExecutionId) return;
  const parentId = child.parentExecutionId;
  const dispatch = await deps.prisma.$transaction(async (tx) => {
    const single = await tx.wait.findFirst({ where: { childExecutionId: child.id, status: "pending" } });
    if (single) return resolveWait(tx, single, childOutcome(child));
    if (!child.stepKey) return null;
    // A batch: the parent's wait lists its children. Under the parent's lock, so of two children
    // finishing at once the later one sees both done.
    await lockExecution(tx, parentId);
    const batch = await tx.wait.findFirst({
      where: {
        executionId: parentId,
        stepKey: child.stepKey,
        status: "pending",
        childExecutionIds: { has: child.id },
      },
    });
    return batch ? settleBatch(tx, batch) : null;
  }, TX_OPTIONS);
  if (dispatch) await deps.dispatcher.dispatch([dispatch]);
}

/** A batch wait once every child is done: `[{workflow_id, success, result | error}]` in request order. */
async function settleBatch(tx: Prisma.TransactionClient, wait: Wait) {
  const children = await tx.execution.findMany({ where: { id: { in: wait.childExecutionIds } } });
  if (children.length < wait.childExecutionIds.length || !children.every((c) => isTerminal(c.status)))
    return null;
  const byId = new Map(children.map((c) => [c.id, c]));
  const output = wait.childExecutionIds.map((id) => {
    const c = byId.get(id)!;
    const outcome = childOutcome(c);
    return outcome.status === "resolved"
      ? { workflow_id: c.workflowId, execution_id: c.id, success: true, result: outcome.output }
      : { workflow_id: c.workflowId, execution_id: c.id, success: false, error: outcome.error.message };
  });
  return resolveWait(tx, wait, { status: "resolved", output });
}

/** What a finished child answers its parent's step: its result, or why it did not finish. */
function childOutcome(child: Execution): WaitOutcome {
  if (child.status === "completed") return { status: "resolved", output: child.result };
  const childError = (child.error as SerializedError | null) ?? null;
  const reason =
    child.status === "cancelled" ? "was cancelled" : `failed: ${childError?.message ?? "unknown error"}`;
  return {
    status: "failed",
    error: {
      name: "ChildWorkflowError",
      message: `child workflow '${child.workflowId}' (${child.id}) ${reason}`,
    },
    output: { child_execution_id: child.id },
  };
}
