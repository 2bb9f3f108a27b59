import { type Execution, Prisma, type PrismaClient } from "@spool/db";
import { type EngineDeps, TX_OPTIONS } from "../deps.js";
import { runDispatch } from "./create-executions.js";
import { laneLimit, lockPartition, type Partition, runningIn } from "./take-run.js";

/*
 * How a lane's slot is handed on (lanes and taking a slot: take-run.ts). A worker that picks up a run
 * whose partition is full does not keep the job: the run stays queued with `slot_waiting_since` set
 * and a new dispatch sequence, and whoever frees a slot dispatches the oldest waiting run of that
 * partition (freeSlot, after every turn a run ends). A sweep repairs a wake-up that was lost, and
 * wakes waiters when a limit is raised (wakeStrandedSlotWaiters).
 */

// Purpose: the oldest runs waiting for a slot of one partition stop waiting (their jobs are then
// sent). Params: project, lane, concurrency key (none for the keyless partition: `keyless`), how
// many. Locks: the rows taken (the caller holds the partition's lock). Result: the runs to dispatch.
// The key is matched with = or IS NULL (not IS NOT DISTINCT FROM), so that executions_slot_waiters_idx
// hands out the oldest waiters in order instead of every waiter of the lane being sorted.
const wakeWaiters = (keyless: boolean) => `
  UPDATE executions SET slot_waiting_since = NULL, updated_at = now()
   WHERE id IN (SELECT id FROM executions
                 WHERE project_id = $1::uuid AND queue_name = $2
                   AND ${keyless ? "concurrency_key IS NULL" : "concurrency_key = $4"}
                   AND status = 'queued' AND slot_waiting_since IS NOT NULL
                 ORDER BY created_at, id LIMIT $3 FOR UPDATE SKIP LOCKED)
     AND status = 'queued' AND slot_waiting_since IS NOT NULL
  RETURNING id, project_id AS "projectId", dispatch_queue AS "dispatchQueue", dispatch_seq AS "dispatchSeq"`;

/**
 * Dispatches the oldest runs waiting for a slot of the partition, as many as it has free slots (at
 * most `max`), and returns how many. Under the partition's lock, as every start of the lane counts
 * its slots: a start that found the partition full has either committed its wait (and is seen here)
 * or counts after this run's end (and takes the slot itself), so no wake-up is lost between them.
 */
export async function handOnFreeSlots(deps: EngineDeps, partition: Partition, max: number): Promise<number> {
  const woken = await deps.prisma.$transaction(async (tx) => {
    await lockPartition(tx, partition);
    const limit = await laneLimit(tx, partition.projectId, partition.queueName);
    const free = limit === null ? max : Math.min(max, limit - (await runningIn(tx, partition)));
    if (free <= 0) return [];
    const key = partition.concurrencyKey;
    return tx.$queryRawUnsafe<Pick<Execution, "id" | "projectId" | "dispatchQueue" | "dispatchSeq">[]>(
      wakeWaiters(key === null),
      partition.projectId,
      partition.queueName,
      free,
      ...(key === null ? [] : [key]),
    );
  }, TX_OPTIONS);
  await deps.dispatcher.dispatch(woken.map((e) => runDispatch(e)));
  return woken.length;
}

/** How long a process trusts what it read of a lane's limit when a run leaves it. */
const LIMIT_CACHE_MS = 1000;
const LIMIT_CACHE_MAX = 10_000;

/**
 * Lane limits as last read, for freeSlot: ending a run must not cost a query per run when its lane
 * has no limit. A limit set within the last second may be missed here; the sweep wakes what that
 * leaves waiting.
 */
export class LaneLimits {
  private readonly cache = new Map<string, { limit: number | null; until: number }>();

  constructor(private readonly prisma: PrismaClient) {}

  async of(projectId: string, queueName: string): Promise<number | null> {
    const key = `${projectId}/${queueName}`;
    const hit = this.cache.get(key);
    if (hit && hit.until > Date.now()) return hit.limit;
    const limit = await laneLimit(this.prisma, projectId, queueName);
    if (this.cache.size >= LIMIT_CACHE_MAX) this.cache.clear();
    this.cache.set(key, { limit, until: Date.now() + LIMIT_CACHE_MS });
    return limit;
  }
}

/**
 * After a run's turn ended (it left `running`, committed): the slot it held goes to the oldest run
 * waiting for one in its partition. Best effort: the sweep repairs a wake-up lost here.
 */
export async function freeSlot(deps: EngineDeps, execution: Execution): Promise<void> {
  if (execution.status === "running") return;
  try {
    if ((await deps.laneLimits.of(execution.projectId, execution.queueName)) === null) return;
    // One: the slot this run held (a larger gap, e.g. a raised limit, is the sweep's).
    await handOnFreeSlots(deps, execution, 1);
  } catch (err) {
    deps.logger.warn({ err: String(err), execution_id: execution.id }, "slot not handed on; the sweep will");
  }
}

// Purpose: the partitions with runs waiting for a slot. Params: none. Locks: none. Result: one row
// per (project, lane, key).
const WAITING_PARTITIONS = Prisma.sql`
  SELECT DISTINCT project_id AS "projectId", queue_name AS "queueName", concurrency_key AS "concurrencyKey"
    FROM executions WHERE status = 'queued' AND slot_waiting_since IS NOT NULL`;

/**
 * Wakes runs waiting for a slot that is free: a wake-up lost with a crash, a limit raised or removed.
 * Returns how many were dispatched.
 */
export async function wakeStrandedSlotWaiters(deps: EngineDeps, batch = 500): Promise<number> {
  const partitions = await deps.prisma.$queryRaw<Partition[]>(WAITING_PARTITIONS);
  let woken = 0;
  for (const p of partitions) woken += await handOnFreeSlots(deps, p, batch);
  return woken;
}
