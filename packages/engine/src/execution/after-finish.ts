import type { Execution } from "@spool/db";
import { isTerminal } from "@spool/shared";
import type { EngineDeps } from "../deps.js";
import { runJobId } from "../dispatch/dispatcher.js";
import { freeSlot } from "./lane-slots.js";
import { notifyParent } from "./notify-parent.js";

/**
 * Channel on which every transition that ends a worker's turn is announced (payload: the run's id):
 * complete, fail or retry, park, hand back, cancel. `?wait=` requests and push dispatchers holding
 * the run's job listen; both re-read the run from Postgres, so a lost announcement only delays them.
 */
export const SETTLED_CHANNEL = "spool:settled";

/** The largest finished row an announcement carries; a larger one is re-read by whoever waits. */
const MAX_ANNOUNCED_ROW_CHARS = 8 * 1024;

const DATE_FIELDS = [
  "createdAt",
  "updatedAt",
  "startedAt",
  "completedAt",
  "cancelledAt",
  "deadlineAt",
] as const satisfies readonly (keyof Execution)[];

/**
 * Best effort: watchers also re-check on their own. The message is the run's id; a finished run's
 * announcement also carries its committed row (`<id>\n<row as JSON>`) when small, so a `?wait=`
 * request answers without reading it again. This process's own watchers are woken first, without
 * the trip through Redis: a remote worker's completion reaches the API that holds the run's
 * `?wait=` request and its push.
 */
export async function announceSettled(
  deps: Pick<EngineDeps, "redis" | "watcher">,
  execution: Execution,
): Promise<void> {
  deps.watcher.wake(execution);
  let message = execution.id;
  if (isTerminal(execution.status)) {
    const row = JSON.stringify(execution);
    if (row.length <= MAX_ANNOUNCED_ROW_CHARS) message = `${execution.id}\n${row}`;
  }
  await deps.redis.publish(SETTLED_CHANNEL, message).catch(() => {});
}

/** An announcement's run id, and the row it carries (parsed only when asked for). */
export function readAnnouncement(message: string): { id: string; row: () => Execution | undefined } {
  const nl = message.indexOf("\n");
  if (nl < 0) return { id: message, row: () => undefined };
  return {
    id: message.slice(0, nl),
    row: () => {
      const row = JSON.parse(message.slice(nl + 1)) as Record<string, unknown>;
      for (const f of DATE_FIELDS) if (typeof row[f] === "string") row[f] = new Date(row[f] as string);
      return row as unknown as Execution;
    },
  };
}

/**
 * What follows every transition that ends a run's turn (it leaves `running`: finished, parked,
 * queued again), after its commit: the lane slot it held goes to a run waiting for one, and watchers
 * are told.
 */
export async function afterTurn(deps: EngineDeps, execution: Execution): Promise<void> {
  await freeSlot(deps, execution);
  await announceSettled(deps, execution);
}

/**
 * What follows every terminal transition, after its commit: the parent waiting on this run wakes,
 * then what follows every turn. The run's trace needs nothing here: the transition wrote it in its
 * own transaction. A run that ended without ever starting (cancelled, timed out) loses its waiting
 * job: a worker that picked it up would start nothing, but may defer its start to the first step's
 * write (deferred-start.ts), and so run that step first.
 */
export async function afterFinish(deps: EngineDeps, execution: Execution): Promise<void> {
  deps.metrics.runFinished(execution);
  if (execution.startedAt === null) {
    await deps.dispatcher.removeJob(
      execution.projectId,
      execution.dispatchQueue,
      runJobId(execution.id, execution.dispatchSeq),
    );
  }
  await notifyParent(deps, execution);
  await afterTurn(deps, execution);
}
