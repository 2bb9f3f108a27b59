import type { Execution } from "@spool/db";
import type { EngineDeps } from "../deps.js";
import { notifyParent } from "./notify-parent.js";

/**
 * Channel on which every transition that ends a worker's turn is announced (payload: the run's id):
 * complete, fail or retry, park, hand back, cancel. `?wait=` requests and push dispatchers holding
 * the run's job listen; both re-read the run from Postgres, so a lost announcement only delays them.
 */
export const SETTLED_CHANNEL = "spool:settled";

/** Best effort: watchers also re-check on their own. */
export async function announceSettled(deps: Pick<EngineDeps, "redis">, execution: Execution): Promise<void> {
  await deps.redis.publish(SETTLED_CHANNEL, execution.id).catch(() => {});
}

/**
 * What follows every terminal transition, after its commit: the parent waiting on this run wakes,
 * and watchers are told. The run's trace needs nothing here: the transition wrote it in its own
 * transaction.
 */
export async function afterFinish(deps: EngineDeps, execution: Execution): Promise<void> {
  await notifyParent(deps, execution);
  await announceSettled(deps, execution);
}
