import type { Execution, PrismaClient } from "@spool/db";
import { transition } from "./transition.js";

/**
 * A worker claims the execution a job names. Only the job made for the current dispatch sequence
 * may run it: an older job (superseded by a retry, a wake or a hand-back) is stale and skipped.
 * `running` is accepted too: BullMQ redelivers the job of a worker that died mid-run (or whose
 * job lock expired while it lived on: the new lease fences that worker off, see claim.ts).
 */
export async function startExecution(
  prisma: PrismaClient,
  args: { executionId: string; dispatchSeq: number; workerId: string | null },
): Promise<Execution | null> {
  const row = await prisma.execution.findUnique({ where: { id: args.executionId } });
  if (!row || row.dispatchSeq !== args.dispatchSeq || (row.status !== "queued" && row.status !== "running")) {
    return null;
  }
  return transition(prisma, {
    executionId: args.executionId,
    from: ["queued", "running"],
    to: "running",
    where: { dispatchSeq: args.dispatchSeq },
    data: { workerId: args.workerId, startedAt: row.startedAt ?? new Date(), lease: { increment: 1 } },
  });
}
