import type { Execution } from "@spool/db";
import { conflict } from "@spool/shared";
import { type EngineDeps, TX_OPTIONS } from "../deps.js";
import { lockProjectExecution } from "./lock.js";
import { resolveWait } from "./resolve-wait.js";

/**
 * suspended → queued: the suspended step returns `data`. 409 unless the execution is suspended;
 * 404 for an unknown id or another project's.
 */
export async function resumeExecution(
  deps: EngineDeps,
  args: { projectId: string; executionId: string; data: unknown },
): Promise<Execution> {
  const result = await deps.prisma.$transaction(async (tx) => {
    const row = await lockProjectExecution(tx, args.projectId, args.executionId);
    if (row.status !== "suspended") {
      throw conflict(`execution is ${row.status}, not suspended; only a suspended execution can be resumed`, {
        status: row.status,
      });
    }
    const wait = await tx.wait.findFirst({
      where: {
        executionId: row.id,
        kind: "suspend",
        status: "pending",
        ...(row.suspendedStepKey ? { stepKey: row.suspendedStepKey } : {}),
      },
      orderBy: { seq: "asc" },
    });
    if (!wait) throw conflict("execution has no open suspend step to resume");
    const dispatch = await resolveWait(tx, wait, { status: "resolved", output: args.data ?? {} });
    const resumed = await tx.execution.findUniqueOrThrow({ where: { id: row.id } });
    return { resumed, dispatch };
  }, TX_OPTIONS);
  if (result.dispatch) await deps.dispatcher.dispatch([result.dispatch]);
  return result.resumed;
}
