import type { Db, Execution } from "@spool/db";
import { transition } from "./transition.js";

/*
 * Taking a run (every start: in-cluster, pushed, redelivered) within its lane. A run's queue
 * (`queue_name`) is its lane: any name a run, trigger or schedule gives. Its jobs travel on the
 * BullMQ queue its workflow was registered on (`dispatch_queue`), which every worker serving the
 * workflow consumes, so no lane is a trap. A lane's concurrency limit (`queues.concurrency_limit`)
 * is a partition limit: at most N runs of the lane run at once per concurrency key (runs without a
 * key share one partition), across every worker, counted in Postgres at each start. Only `running`
 * holds a slot: a run that waits (timer, event, child, approval) holds none, and takes one again
 * when it is resumed. How a slot is handed on: lane-slots.ts.
 */

/**
 * queued|running → running on `workerId` with a new lease, if the run is still in the state `row`
 * was read in (its dispatch sequence and lease): the one write of every start.
 */
export async function takeRun(db: Db, row: Execution, workerId: string | null) {
  // From the status it was read in only: the lane check above was made for that status.
  if (row.status !== "queued" && row.status !== "running") return null;
  return transition(db, {
    executionId: row.id,
    from: [row.status],
    to: "running",
    where: { dispatchSeq: row.dispatchSeq, lease: row.lease },
    data: {
      workerId,
      startedAt: row.startedAt ?? new Date(),
      lease: { increment: 1 },
      slotWaitingSince: null,
      pushHolder: null,
    },
  });
}

/** A lane's partition: the runs of one queue with one concurrency key (null: those without). */
export type Partition = Pick<Execution, "projectId" | "queueName" | "concurrencyKey">;

// The second key space of the advisory locks keeps these apart from the migration and topic locks.
const PARTITION_LOCK = "SELECT 1 FROM (SELECT pg_advisory_xact_lock(hashtextextended($1, 7370130003))) l";

/** Serializes, until the transaction ends, whoever counts or hands on the partition's slots. */
export async function lockPartition(tx: Db, p: Partition): Promise<void> {
  const key = `${p.projectId}/${p.queueName}/${p.concurrencyKey === null ? "-" : `k:${p.concurrencyKey}`}`;
  await tx.$queryRawUnsafe(PARTITION_LOCK, key);
}

/** The runs of the partition holding a slot (running). Read it after lockPartition. */
export function runningIn(tx: Db, p: Partition): Promise<number> {
  return tx.execution.count({
    where: {
      projectId: p.projectId,
      queueName: p.queueName,
      concurrencyKey: p.concurrencyKey,
      status: "running",
    },
  });
}

/** SQL: whether a lane (its project and queue name, as SQL expressions) has a concurrency limit. */
export const laneHasLimit = (projectId: string, queueName: string) =>
  `EXISTS (SELECT 1 FROM queues q WHERE q.project_id = ${projectId} AND q.name = ${queueName}
                                    AND q.concurrency_limit IS NOT NULL)`;

/** A lane's limit, or null when it has none (no queue row, or no limit). */
export async function laneLimit(db: Db, projectId: string, queueName: string): Promise<number | null> {
  const queue = await db.queue.findUnique({
    where: { projectId_name: { projectId, name: queueName } },
    select: { concurrencyLimit: true },
  });
  return queue?.concurrencyLimit ?? null;
}

export type LaneStart =
  | { status: "started"; execution: Execution }
  /** The partition is full: the run waits for a slot, without a job. */
  | { status: "slot_wait"; execution: Execution }
  | { status: "stale" };

/**
 * queued|running → running on `workerId` within the lane's limit; run it inside a transaction. A run
 * already running holds its slot (a redelivered job). A queued run of a limited lane takes a free
 * slot of its partition, under the partition's advisory lock (so two starts never count the same
 * free slot), or waits for one. `row` is the run as read before; a run that moved since is stale.
 */
export async function takeRunInLane(tx: Db, row: Execution, workerId: string | null): Promise<LaneStart> {
  if (row.status === "queued") {
    const limit = await laneLimit(tx, row.projectId, row.queueName);
    if (limit !== null) {
      await lockPartition(tx, row);
      // Read after the lock: every start that committed before it is counted.
      if ((await runningIn(tx, row)) >= limit) {
        const waiting = await tx.execution.updateManyAndReturn({
          where: { id: row.id, status: "queued", dispatchSeq: row.dispatchSeq },
          data: { dispatchSeq: { increment: 1 }, slotWaitingSince: new Date(), updatedAt: new Date() },
        });
        return waiting[0] ? { status: "slot_wait", execution: waiting[0] } : { status: "stale" };
      }
    }
  }
  const started = await takeRun(tx, row, workerId);
  return started ? { status: "started", execution: started } : { status: "stale" };
}
