import { type EngineDeps, TX_OPTIONS } from "../deps.js";
import type { DispatchRequest } from "../dispatch/dispatcher.js";
import { resolveWait } from "./resolve-wait.js";

/** Timers may fire this early (BullMQ delay granularity) and still count as due. */
const EARLY_TOLERANCE_MS = 25;

/**
 * A timed wait is due: a sleep completes; an event, suspend or child wait times out with a
 * StepTimeoutError the workflow can catch. Idempotent: the delayed job and the scheduler's sweep
 * may both fire it. Returns false when it was not (or no longer) due.
 */
export async function fireTimer(deps: EngineDeps, waitId: string): Promise<boolean> {
  const dispatch: DispatchRequest | null | false = await deps.prisma.$transaction(async (tx) => {
    const wait = await tx.wait.findUnique({ where: { id: waitId } });
    if (wait?.status !== "pending" || !wait.wakeAt) return false;
    if (wait.wakeAt.getTime() > Date.now() + EARLY_TOLERANCE_MS) return false;
    if (wait.kind === "sleep") return resolveWait(tx, wait, { status: "resolved", output: null });
    const what =
      wait.kind === "event"
        ? `an event on topic '${wait.topic}'`
        : wait.kind === "suspend"
          ? "resume"
          : "the child run";
    return resolveWait(tx, wait, {
      status: "timed_out",
      error: { name: "StepTimeoutError", message: `step '${wait.stepKey}' timed out waiting for ${what}` },
    });
  }, TX_OPTIONS);
  if (dispatch === false) return false;
  if (dispatch) await deps.dispatcher.dispatch([dispatch]);
  return true;
}
