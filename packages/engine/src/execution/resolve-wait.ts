import { type Db, jsonOrNull, type Wait } from "@spool/db";
import type { SerializedError } from "@spool/shared";
import type { DispatchRequest } from "../dispatch/dispatcher.js";
import { runDispatch } from "./create-executions.js";
import { lockExecution } from "./lock.js";
import { transition } from "./transition.js";

export type WaitOutcome =
  | { status: "resolved"; output: unknown }
  | { status: "timed_out" | "failed"; error: SerializedError; output?: unknown };

/**
 * Settles a pending wait and wakes its execution: the wait's result becomes the step's stored
 * result (taking the seq reserved for it), and a waiting or suspended execution goes back to
 * queued. Returns the dispatch to send after commit, or null when nothing is to be woken.
 * No-op when the wait is no longer pending (someone else settled it first).
 */
export async function resolveWait(db: Db, wait: Wait, outcome: WaitOutcome): Promise<DispatchRequest | null> {
  await lockExecution(db, wait.executionId);
  const settled = await db.wait.updateMany({
    where: { id: wait.id, status: "pending" },
    data: {
      status: outcome.status === "timed_out" ? "timed_out" : "resolved",
      resolvedData: jsonOrNull(outcome.status === "resolved" ? outcome.output : { error: outcome.error }),
      resolvedAt: new Date(),
    },
  });
  if (settled.count === 0) return null;

  const failed = outcome.status !== "resolved";
  await db.stepResult.upsert({
    where: { executionId_stepKey: { executionId: wait.executionId, stepKey: wait.stepKey } },
    create: {
      executionId: wait.executionId,
      stepKey: wait.stepKey,
      seq: wait.seq,
      kind: wait.kind,
      status: failed ? "failed" : "completed",
      output: jsonOrNull(outcome.output),
      error: failed ? jsonOrNull(outcome.error) : jsonOrNull(null),
      attempts: 1,
      startedAt: wait.createdAt,
      completedAt: new Date(),
    },
    update: {},
  });
  return requeueExecution(db, wait.executionId);
}

/** waiting|suspended → queued with a new dispatch sequence. Null when it was not parked. */
export async function requeueExecution(db: Db, executionId: string): Promise<DispatchRequest | null> {
  const row = await transition(db, {
    executionId,
    from: ["waiting", "suspended"],
    to: "queued",
    data: { dispatchSeq: { increment: 1 }, suspendedStepKey: null, workerId: null },
  });
  return row ? runDispatch(row) : null;
}
