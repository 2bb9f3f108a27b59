import { type Execution, jsonOrNull, type Prisma } from "@spool/db";
import type { SerializedError } from "@spool/shared";
import type { EngineDeps } from "../deps.js";
import type { DispatchRequest } from "../dispatch/dispatcher.js";
import { afterFinish } from "./after-finish.js";
import { runDispatch } from "./create-executions.js";
import type { ExecutionStatus } from "./statuses.js";
import { transition } from "./transition.js";

/** running → completed. Null when the run was no longer this dispatch's (cancelled, handed back). */
export async function completeExecution(
  deps: EngineDeps,
  args: { executionId: string; dispatchSeq: number; result: unknown },
): Promise<Execution | null> {
  const row = await transition(deps.prisma, {
    executionId: args.executionId,
    from: ["running"],
    to: "completed",
    where: { dispatchSeq: args.dispatchSeq },
    data: {
      result: jsonOrNull(args.result),
      completedAt: new Date(),
      workerId: null,
      error: jsonOrNull(null),
    },
  });
  if (row) {
    // A branch still parked when the workflow returned (e.g. the loser of a Promise.race) must
    // not go on matching events and firing timers for a finished run.
    await deps.prisma.wait.updateMany({
      where: { executionId: row.id, status: "pending" },
      data: { status: "cancelled" },
    });
    await afterFinish(deps, row, { byWorker: true });
  }
  return row;
}

/**
 * A failed attempt. With `retryDelayMs` the run goes back to queued as attempt+1, delivered by a
 * delayed job; otherwise it fails for good and its parent (if waiting on it) is told.
 * `from` lets sweeps fail runs that are not running (e.g. a run timeout while waiting).
 */
export async function failExecution(
  deps: EngineDeps,
  args: {
    executionId: string;
    error: SerializedError;
    dispatchSeq?: number;
    retryDelayMs?: number | null;
    from?: ExecutionStatus[];
  },
): Promise<Execution | null> {
  const guard = args.dispatchSeq === undefined ? {} : { dispatchSeq: args.dispatchSeq };
  if (args.retryDelayMs != null) {
    const row = await deps.prisma.$transaction(async (tx) => {
      const retried = await transition(tx, {
        executionId: args.executionId,
        from: ["running"],
        to: "queued",
        where: guard,
        data: {
          attempt: { increment: 1 },
          dispatchSeq: { increment: 1 },
          error: jsonOrNull(args.error),
          workerId: null,
        },
      });
      if (retried) await clearFailedSteps(tx, retried.id);
      return retried;
    });
    if (row) await deps.dispatcher.dispatch([{ ...runDispatch(row), delayMs: args.retryDelayMs }]);
    return row;
  }
  const row = await deps.prisma.$transaction(async (tx) => {
    const failed = await transition(tx, {
      executionId: args.executionId,
      from: args.from ?? ["running"],
      to: "failed",
      where: guard,
      data: { error: jsonOrNull(args.error), completedAt: new Date(), workerId: null },
    });
    if (failed)
      await tx.wait.updateMany({
        where: { executionId: failed.id, status: "pending" },
        data: { status: "cancelled" },
      });
    return failed;
  });
  // Guarded by a dispatch sequence = the worker running it; otherwise a sweep (e.g. run timeout).
  if (row) await afterFinish(deps, row, { byWorker: args.dispatchSeq !== undefined });
  return row;
}

/**
 * running → queued for another worker (drain on shutdown, or a worker that stopped heartbeating).
 * A new dispatch sequence makes the old job stale, so only the new one runs it.
 */
export async function releaseExecution(
  deps: EngineDeps,
  args: { executionId: string; dispatchSeq?: number },
): Promise<Execution | null> {
  const row = await transition(deps.prisma, {
    executionId: args.executionId,
    from: ["running"],
    to: "queued",
    where: args.dispatchSeq === undefined ? {} : { dispatchSeq: args.dispatchSeq },
    data: { dispatchSeq: { increment: 1 }, workerId: null },
  });
  if (row) await deps.dispatcher.dispatch([runDispatch(row)]);
  return row;
}

export type { DispatchRequest };

/**
 * The new attempt runs the failed steps again; completed ones stay done. A failed wait step (a
 * timeout, a failed child) goes with its settled wait row, or the next attempt would park on a wait
 * that can never fire again.
 */
async function clearFailedSteps(tx: Prisma.TransactionClient, executionId: string): Promise<void> {
  const failed = await tx.stepResult.findMany({
    where: { executionId, status: "failed" },
    select: { stepKey: true },
  });
  const keys = failed.map((f) => f.stepKey);
  if (keys.length === 0) return;
  await tx.stepResult.deleteMany({ where: { executionId, stepKey: { in: keys } } });
  await tx.wait.deleteMany({ where: { executionId, stepKey: { in: keys }, status: { not: "pending" } } });
}
