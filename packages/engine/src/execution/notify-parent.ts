import type { Execution } from "@spool/db";
import type { SerializedError } from "@spool/shared";
import type { EngineDeps } from "../deps.js";
import { TX_OPTIONS } from "../deps.js";
import { resolveWait } from "./resolve-wait.js";

/**
 * A child run reached a terminal status: its result (or error) becomes the parent's invoke step
 * result and the parent wakes. Runs in its own transaction after the child's, so lock order stays
 * parent-before-child everywhere (cancel locks parent then children); the sweep repairs a crash
 * between the two.
 */
export async function notifyParent(deps: EngineDeps, child: Execution): Promise<void> {
  if (!child.parentExecutionId) return;
  const dispatch = await deps.prisma.$transaction(async (tx) => {
    const wait = await tx.wait.findFirst({ where: { childExecutionId: child.id, status: "pending" } });
    if (!wait) return null;
    if (child.status === "completed")
      return resolveWait(tx, wait, { status: "resolved", output: child.result });
    const childError = (child.error as SerializedError | null) ?? null;
    const reason =
      child.status === "cancelled" ? "was cancelled" : `failed: ${childError?.message ?? "unknown error"}`;
    return resolveWait(tx, wait, {
      status: "failed",
      error: {
        name: "ChildWorkflowError",
        message: `child workflow '${child.workflowId}' (${child.id}) ${reason}`,
      },
      output: { child_execution_id: child.id },
    });
  }, TX_OPTIONS);
  if (dispatch) await deps.dispatcher.dispatch([dispatch]);
}
