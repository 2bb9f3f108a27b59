import type { Execution } from "@spool/db";
import type { EngineDeps } from "../deps.js";
import { notifyParent } from "./notify-parent.js";

/** Channel on which a run that reached a terminal status is announced (payload: its id). */
export const FINISHED_CHANNEL = "spool:finished";

/**
 * What follows every terminal transition, after its commit: the parent waiting on this run wakes,
 * and clients waiting with `?wait=` are told (best effort: they also re-check on their own).
 * The run's trace needs nothing here: the transition wrote it in its own transaction.
 */
export async function afterFinish(deps: EngineDeps, execution: Execution): Promise<void> {
  await notifyParent(deps, execution);
  await deps.redis.publish(FINISHED_CHANNEL, execution.id).catch(() => {});
}
