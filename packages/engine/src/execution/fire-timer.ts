import type { Execution } from "@spool/db";
import { type EngineDeps, TX_OPTIONS } from "../deps.js";
import { type DispatchRequest, timerJobId } from "../dispatch/dispatcher.js";
import { resolveWait } from "./resolve-wait.js";

/** Timers may fire this early (BullMQ delay granularity) and still count as due. */
const EARLY_TOLERANCE_MS = 25;

/**
 * A timed wait is due: a sleep completes; an event, suspend or child wait times out with a
 * StepTimeoutError the workflow can catch. Idempotent: the delayed job and the scheduler's sweep
 * may both fire it. A job that fires early (another host's clock, BullMQ's granularity) re-arms
 * itself for the rest of the time. Returns false when it was not (or no longer) due.
 */
export async function fireTimer(deps: EngineDeps, waitId: string): Promise<boolean> {
  const outcome = await deps.prisma.$transaction(async (tx) => {
    const wait = await tx.wait.findUnique({ where: { id: waitId } });
    if (wait?.status !== "pending" || !wait.wakeAt) return null;
    const early = wait.wakeAt.getTime() - Date.now();
    if (early > EARLY_TOLERANCE_MS) {
      const e = await tx.execution.findUniqueOrThrow({ where: { id: wait.executionId } });
      return { fired: false, dispatch: timerDispatch(e, wait.id, early, Date.now()) };
    }
    if (wait.kind === "sleep") {
      // What the remote worker protocol stores for a finished time wait; a workflow's sleep ignores it.
      const output = { wait_until: wait.wakeAt.toISOString() };
      return { fired: true, dispatch: await resolveWait(tx, wait, { status: "resolved", output }) };
    }
    const what =
      wait.kind === "event"
        ? `an event on topic '${wait.topic}'`
        : wait.kind === "suspend"
          ? "resume"
          : "the child run";
    const dispatch = await resolveWait(tx, wait, {
      status: "timed_out",
      error: {
        name: "StepTimeoutError",
        message: `step '${wait.stepKey}' timed out waiting for ${what}: the wait expired at ${wait.wakeAt.toISOString()}`,
      },
    });
    return { fired: true, dispatch };
  }, TX_OPTIONS);
  if (outcome?.dispatch) await deps.dispatcher.dispatch([outcome.dispatch]);
  return outcome?.fired ?? false;
}

/** The delayed job that fires a wait's timer. */
export const timerDispatch = (
  e: Pick<Execution, "id" | "projectId" | "dispatchQueue">,
  waitId: string,
  delayMs: number,
  rearmedAt?: number,
): DispatchRequest => ({
  projectId: e.projectId,
  queueName: e.dispatchQueue,
  jobId: timerJobId(waitId, rearmedAt),
  delayMs,
  data: { kind: "timer", projectId: e.projectId, executionId: e.id, waitId },
});
