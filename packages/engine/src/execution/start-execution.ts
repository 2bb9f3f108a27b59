import type { Execution, PrismaClient, pg } from "@spool/db";
import { FIRST_START_CLAIM } from "@spool/shared";
import { TX_OPTIONS } from "../deps.js";
import { executionFields } from "../sql/rows.js";
import { type JournalRows, journalColumns, journalOf, type RawWait } from "./journal-store.js";
import { laneHasLimit, takeRunInLane } from "./take-run.js";
import { rawTransition } from "./transition.js";

/**
 * What a job's start found: the run is now this worker's, the job is stale, a live remote worker
 * holds the run, or the run's lane partition is full (it waits for a slot, without this job).
 */
export type StartResult =
  | { status: "started"; execution: Execution; journal?: JournalRows }
  | { status: "stale" }
  | { status: "held"; execution: Execution }
  | { status: "slot_wait"; execution: Execution };

export const START = rawTransition(["queued", "running"], "running");

/**
 * What every start of the run `e` writes (the SET list): it runs on `worker` from `startedAt` (its
 * first start's time is kept) under a new lease, waits for no slot any more, and is held by
 * `pushHolder` (an API process that pushed it without a job) or, by default, by its job.
 */
export const takenColumns = (worker: string, startedAt: string, now: string, pushHolder = "NULL") =>
  `status = '${START.to}', worker_id = ${worker}, started_at = COALESCE(e.started_at, ${startedAt}),
   lease = e.lease + 1, updated_at = ${now}, slot_waiting_since = NULL, push_holder = ${pushHolder}`;

/**
 * The same start written by a new run's insert (insertRootRunFrom's `start`): it runs on `worker` (a
 * SQL expression; null: it is inserted queued instead) from `startedAt` under its first lease, held
 * by `holder`.
 */
export const startedAsInserted = (worker: string, startedAt: string, holder: string) => {
  const ifStarted = (value: string, otherwise: string) =>
    `CASE WHEN ${worker} IS NULL THEN ${otherwise} ELSE ${value} END`;
  return {
    status: ifStarted(`'${START.to}'`, "'queued'"),
    columns: "worker_id, started_at, lease, push_holder",
    values: `${worker}, ${ifStarted(`${startedAt}::timestamptz`, "NULL")}, ${ifStarted(String(FIRST_START_CLAIM.lease), "0")}, ${ifStarted(holder, "NULL")}`,
  };
};

// Purpose: take the run and read its journal in one round trip (the common case of every job).
// Params: execution, dispatch seq, worker, now. Locks: the execution row. Result: the started row with
// its stored steps and open waits as JSON, or no row when the job is stale, a live push worker holds
// the run, or the run needs a slot of a limited lane (startExecution then finds out which, the slow
// way: a lane's limit is counted under a lock).
const START_AND_LOAD = `
  WITH taken AS (
    UPDATE executions e
       SET ${takenColumns("$3", "$4", "$4")}
     WHERE e.id = $1 AND e.dispatch_seq = $2 AND e.status = ANY($5::text[])
       AND NOT (e.status = 'running' AND e.pushed_lease = e.lease AND EXISTS (
             SELECT 1 FROM workers w WHERE w.id = e.worker_id AND w.mode = 'push' AND w.status = 'online'))
       AND NOT (e.status = 'queued' AND ${laneHasLimit("e.project_id", "e.queue_name")})
    RETURNING ${executionFields("e")})
  SELECT taken.*, ${journalColumns("$1")} FROM taken`;

/**
 * A worker claims the execution a job names. Only the job made for the current dispatch sequence
 * may run it: an older job (superseded by a retry, a wake or a hand-back) is stale and skipped.
 * `running` is accepted too: BullMQ redelivers the job of a worker that died mid-run (or whose
 * job lock expired while it lived on: the new lease fences that worker off, see claim.ts). But not
 * when a push worker that is still online holds the run: the job came back because the dispatcher
 * that pushed it died, not the worker running it, and starting it again would run its steps twice.
 *
 * A queued run of a lane with a limit takes a slot of its partition, or waits for one (take-run.ts).
 *
 * The common case is one statement that also reads the run's journal; when it takes nothing, the
 * row is read to tell a stale job from a held run or a limited lane.
 */
export async function startExecution(
  db: { prisma: PrismaClient; pool: pg.Pool },
  args: { executionId: string; dispatchSeq: number; workerId: string | null },
): Promise<StartResult> {
  const { rows } = await db.pool.query<
    Execution & { journalSteps: JournalRows["steps"]; journalWaits: RawWait[] }
  >({
    name: "spool_start_and_load",
    text: START_AND_LOAD,
    values: [args.executionId, args.dispatchSeq, args.workerId, new Date(), START.from],
  });
  const taken = rows[0];
  if (taken) {
    const { rest: execution, journal } = journalOf(taken);
    return { status: "started", execution, journal };
  }
  const row = await db.prisma.execution.findUnique({ where: { id: args.executionId } });
  if (!row || row.dispatchSeq !== args.dispatchSeq || (row.status !== "queued" && row.status !== "running")) {
    return { status: "stale" };
  }
  // Held: an online push worker took the push under the current lease (a push that may never have
  // left does not count: the run is started here instead, and the new lease fences any copy).
  if (
    row.status === "running" &&
    row.workerId &&
    row.pushedLease === row.lease &&
    (await heldByOnlinePushWorker(db.prisma, row.workerId))
  ) {
    return { status: "held", execution: row };
  }
  return db.prisma.$transaction((tx) => takeRunInLane(tx, row, args.workerId), TX_OPTIONS);
}

async function heldByOnlinePushWorker(prisma: PrismaClient, workerId: string): Promise<boolean> {
  const holder = await prisma.worker.findUnique({
    where: { id: workerId },
    select: { mode: true, status: true },
  });
  return holder?.mode === "push" && holder.status === "online";
}
