import type { Db, Execution, PrismaClient } from "@spool/db";
import { transition } from "./transition.js";

/** What a job's start found: the run is now this worker's, the job is stale, or a live remote worker holds the run. */
export type StartResult =
  | { status: "started"; execution: Execution }
  | { status: "stale" }
  | { status: "held"; execution: Execution };

/**
 * A worker claims the execution a job names. Only the job made for the current dispatch sequence
 * may run it: an older job (superseded by a retry, a wake or a hand-back) is stale and skipped.
 * `running` is accepted too: BullMQ redelivers the job of a worker that died mid-run (or whose
 * job lock expired while it lived on: the new lease fences that worker off, see claim.ts). But not
 * when a push worker that is still online holds the run: the job came back because the dispatcher
 * that pushed it died, not the worker running it, and starting it again would run its steps twice.
 */
export async function startExecution(
  prisma: PrismaClient,
  args: { executionId: string; dispatchSeq: number; workerId: string | null },
): Promise<StartResult> {
  const row = await prisma.execution.findUnique({ where: { id: args.executionId } });
  if (!row || row.dispatchSeq !== args.dispatchSeq || (row.status !== "queued" && row.status !== "running")) {
    return { status: "stale" };
  }
  // Held: an online push worker took the push under the current lease (a push that may never have
  // left does not count: the run is started here instead, and the new lease fences any copy).
  if (
    row.status === "running" &&
    row.workerId &&
    row.pushedLease === row.lease &&
    (await heldByOnlinePushWorker(prisma, row.workerId))
  ) {
    return { status: "held", execution: row };
  }
  const started = await takeRun(prisma, row, args.workerId);
  return started ? { status: "started", execution: started } : { status: "stale" };
}

/**
 * queued|running → running on `workerId` with a new lease, if the run is still in the state `row`
 * was read in (its dispatch sequence and lease): the one write of every start.
 */
export function takeRun(db: Db, row: Execution, workerId: string | null) {
  return transition(db, {
    executionId: row.id,
    from: ["queued", "running"],
    to: "running",
    where: { dispatchSeq: row.dispatchSeq, lease: row.lease },
    data: { workerId, startedAt: row.startedAt ?? new Date(), lease: { increment: 1 } },
  });
}

async function heldByOnlinePushWorker(prisma: PrismaClient, workerId: string): Promise<boolean> {
  const holder = await prisma.worker.findUnique({
    where: { id: workerId },
    select: { mode: true, status: true },
  });
  return holder?.mode === "push" && holder.status === "online";
}
