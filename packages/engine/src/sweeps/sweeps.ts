import { Prisma } from "@spool/db";
import type { TimeCursor } from "@spool/shared";
import type { EngineDeps } from "../deps.js";
import { type DispatchRequest, runJobId } from "../dispatch/dispatcher.js";
import { claimOf } from "../execution/claim.js";
import { runDispatch } from "../execution/create-executions.js";
import { failExecution, releaseExecution } from "../execution/finish-execution.js";
import { fireTimer } from "../execution/fire-timer.js";
import { wakeStrandedSlotWaiters } from "../execution/lane-slots.js";
import { notifyParent } from "../execution/notify-parent.js";
import { NON_TERMINAL } from "../execution/statuses.js";
import { createdAfterField } from "../util/keyset.js";
import { MISSED_HEARTBEATS_BEFORE_OFFLINE } from "../workers/workers.js";

export interface SweepOptions {
  /** A queued row this old with no job is re-enqueued (a live job is untouched: same job id). */
  queuedGraceMs?: number;
  /** A timer this overdue was lost (Redis flushed or down) and is fired from Postgres. */
  timerGraceMs?: number;
  batchSize?: number;
  /** A running row this old whose job is gone from BullMQ is released. */
  strandedAfterMs?: number;
}

export interface SweepReport {
  requeued: number;
  timersFired: number;
  workersOffline: number;
  released: number;
  timedOut: number;
  childrenReported: number;
  stranded: number;
  /** Runs waiting for a lane slot that is free (a wake-up lost, a limit raised) dispatched again. */
  slotsHandedOn: number;
}

// Purpose: runs past their deadline that can still time out. Params: how many. Locks: none. Result:
// the runs. The statuses are literals, as in the partial index executions_open_deadline_idx, so that
// the planner finds it whatever the plan (a table of finished runs is never scanned).
const OVERDUE_RUNS = (batchSize: number) => Prisma.sql`
  SELECT id, run_timeout_seconds AS "runTimeoutSeconds" FROM executions
   WHERE deadline_at < now() AND status IN (${Prisma.raw(NON_TERMINAL.map((s) => `'${s}'`).join(", "))})
   LIMIT ${batchSize}`;

/**
 * Repairs what Redis or a dead process lost, from Postgres, the source of truth. Every repair is
 * idempotent (deterministic job ids, conditional transitions), so several schedulers may sweep at
 * once without harm.
 */
export class Sweeps {
  /** requeueLostJobs' pass through a backlog: its bound, and the last run looked at (null: none yet). */
  private requeuePass: { before: Date; after: TimeCursor | undefined } | null = null;

  constructor(private readonly deps: EngineDeps) {}

  async runAll(options: SweepOptions = {}): Promise<SweepReport> {
    const [requeued, timersFired, workers, timedOut, childrenReported] = [
      await this.requeueLostJobs(options),
      await this.fireOverdueTimers(options),
      await this.releaseDeadWorkers(),
      await this.timeOutRuns(options),
      await this.reportFinishedChildren(options),
    ];
    const stranded = await this.releaseStrandedRuns(options);
    const slotsHandedOn = await wakeStrandedSlotWaiters(this.deps);
    return {
      requeued,
      timersFired,
      workersOffline: workers.offline,
      released: workers.released,
      timedOut,
      childrenReported,
      stranded,
      slotsHandedOn,
    };
  }

  /**
   * Removes the BullMQ global concurrency an earlier version kept on each queue (see
   * Dispatcher.removeLegacyLimit). Once per scheduler start; Redis away, it is skipped.
   */
  async removeLegacyQueueLimits(): Promise<number> {
    const queues = await this.deps.prisma.queue.findMany({ select: { projectId: true, name: true } });
    let removed = 0;
    for (const q of queues) {
      try {
        await this.deps.dispatcher.removeLegacyLimit(q.projectId, q.name);
        removed++;
      } catch (err) {
        this.deps.logger.debug({ err: String(err), queue: q.name }, "legacy queue limit not removed");
        return removed;
      }
    }
    return removed;
  }

  /**
   * Queued executions whose BullMQ job is gone, or finished without moving the run on: enqueued
   * again under the same job id. Not those waiting for a lane slot: they have no job on purpose
   * (wakeStrandedSlotWaiters looks after them). A backlog is walked a batch per sweep, in passes: a
   * pass takes the runs queued before it began, oldest first, and the next pass starts again from the
   * oldest, so every run is looked at within a pass however fast new ones come. Only Redis is asked
   * whether their jobs are there and not finished: a backlog whose jobs wait in BullMQ costs one read
   * and one pipelined HMGET a sweep, no enqueue, no write.
   */
  async requeueLostJobs({ queuedGraceMs = 5000, batchSize = 500 }: SweepOptions = {}): Promise<number> {
    const pass = this.requeuePass ?? { before: new Date(Date.now() - queuedGraceMs), after: undefined };
    const rows = await this.deps.prisma.execution.findMany({
      where: {
        status: "queued",
        slotWaitingSince: null,
        AND: [{ updatedAt: { lt: pass.before } }, createdAfterField("updatedAt", pass.after)],
      },
      select: { id: true, projectId: true, dispatchQueue: true, dispatchSeq: true, updatedAt: true },
      orderBy: [{ updatedAt: "asc" }, { id: "asc" }],
      take: batchSize,
    });
    let lost: { missing: DispatchRequest[]; finished: DispatchRequest[] };
    try {
      lost = await this.deps.dispatcher.lostJobs(rows.map((e) => runDispatch(e)));
    } catch (err) {
      // Redis away: the same batch next sweep; the other sweeps go on (they need only Postgres).
      this.deps.logger.debug({ err: String(err) }, "jobs not checked; the next sweep will");
      return 0;
    }
    const last = rows.at(-1);
    this.requeuePass =
      rows.length < batchSize || !last
        ? null
        : { before: pass.before, after: { at: last.updatedAt, id: last.id } };
    // A finished job under a queued run's id (its consumer ended it without moving the run on) is
    // removed, or the enqueue would be a no-op. Should the run have moved on since it was read, the
    // job sent again finds it so and ends.
    for (const r of lost.finished) await this.deps.dispatcher.removeJob(r.projectId, r.queueName, r.jobId);
    const again = [...lost.missing, ...lost.finished];
    return again.length === 0 ? 0 : this.deps.dispatcher.dispatch(again);
  }

  async fireOverdueTimers({ timerGraceMs = 1000, batchSize = 500 }: SweepOptions = {}): Promise<number> {
    const due = await this.deps.prisma.wait.findMany({
      where: { status: "pending", wakeAt: { lt: new Date(Date.now() - timerGraceMs) } },
      select: { id: true },
      orderBy: { wakeAt: "asc" },
      take: batchSize,
    });
    let fired = 0;
    for (const w of due) if (await fireTimer(this.deps, w.id)) fired++;
    return fired;
  }

  /**
   * Workers silent for 3 heartbeat intervals go offline. A push worker's running executions are
   * requeued: its heartbeats are the only sign of it. An in-cluster worker's are not: its BullMQ job
   * locks say whether it lives (its heartbeats go through the API, which may be down while it works
   * on), and BullMQ redelivers the job of one that died.
   */
  async releaseDeadWorkers(): Promise<{ offline: number; released: number }> {
    // Purpose: mark stale workers offline. Locks: the worker rows updated. Result: their ids.
    const dead = await this.deps.prisma.$queryRaw<{ id: string }[]>(Prisma.sql`
      UPDATE workers SET status = 'offline'
      WHERE status IN ('online', 'draining')
        AND last_heartbeat_at < now() - make_interval(secs => heartbeat_interval_seconds * ${MISSED_HEARTBEATS_BEFORE_OFFLINE}::int)
      RETURNING id`);
    // Running executions of any offline push worker: just swept, deregistered, or swept by a
    // replica that crashed before releasing them.
    // Purpose: find them. Locks: none (release is a conditional transition on the claim read here,
    // so a run another worker restarted meanwhile is left alone). Result: id and claim.
    const orphaned = await this.deps.prisma.$queryRaw<{ id: string; dispatchSeq: number; lease: number }[]>(
      Prisma.sql`
      SELECT e.id, e.dispatch_seq AS "dispatchSeq", e.lease FROM executions e JOIN workers w ON w.id = e.worker_id
      WHERE e.status = 'running' AND w.status = 'offline' AND w.mode <> 'queue'`,
    );
    let released = 0;
    for (const e of orphaned) {
      if (await releaseExecution(this.deps, { executionId: e.id, claim: claimOf(e) })) released++;
    }
    return { offline: dead.length, released };
  }

  /**
   * Running executions whose job is gone from Redis while their worker lives on: the processor
   * gave up (e.g. Postgres unreachable through all its attempts) or Redis lost the job. Old enough
   * rows are checked against BullMQ and released to the queue under a new dispatch sequence.
   */
  async releaseStrandedRuns({
    strandedAfterMs = 120_000,
    batchSize = 200,
  }: SweepOptions = {}): Promise<number> {
    const candidates = await this.deps.prisma.execution.findMany({
      // A run held without a job is its holder's (or, once that is gone, OrphanedJobs').
      where: {
        status: "running",
        pushHolder: null,
        updatedAt: { lt: new Date(Date.now() - strandedAfterMs) },
      },
      select: { id: true, projectId: true, dispatchQueue: true, dispatchSeq: true, lease: true },
      orderBy: { updatedAt: "asc" },
      take: batchSize,
    });
    let released = 0;
    for (const e of candidates) {
      const state = await this.deps.dispatcher
        .jobState(e.projectId, e.dispatchQueue, runJobId(e.id, e.dispatchSeq))
        .catch(() => "active"); // Redis unreachable: cannot tell, leave it
      if (state !== "active" && state !== "waiting" && state !== "delayed" && state !== "prioritized") {
        if (await releaseExecution(this.deps, { executionId: e.id, claim: claimOf(e) })) released++;
      }
    }
    return released;
  }

  /** Runs past their run_timeout_seconds fail with a clear error, whatever their status. */
  async timeOutRuns({ batchSize = 500 }: SweepOptions = {}): Promise<number> {
    const overdue = await this.deps.prisma.$queryRaw<{ id: string; runTimeoutSeconds: number | null }[]>(
      OVERDUE_RUNS(batchSize),
    );
    let n = 0;
    for (const e of overdue) {
      const failed = await failExecution(this.deps, {
        executionId: e.id,
        from: NON_TERMINAL,
        error: {
          name: "RunTimeoutError",
          message: `run exceeded its run_timeout_seconds (${e.runTimeoutSeconds}s)`,
          non_retryable: true,
        },
      });
      if (failed) n++;
    }
    return n;
  }

  /** A child finished but its parent was not told (crash between the two transactions). */
  async reportFinishedChildren({ batchSize = 500 }: SweepOptions = {}): Promise<number> {
    // Purpose: children that finished while their parent's invoke wait stayed open. Locks: none
    // (notifyParent settles the wait under the parent's lock). Result: the children.
    // A batch's wait lists its children: once all are done, any one of them settles it.
    const ids = await this.deps.prisma.$queryRaw<{ id: string }[]>(Prisma.sql`
      SELECT c.id FROM waits w JOIN executions c ON c.id = w.child_execution_id
      WHERE w.kind = 'invoke' AND w.status = 'pending' AND c.status IN ('completed', 'failed', 'cancelled')
      UNION ALL
      SELECT w.child_execution_ids[1] FROM waits w
      WHERE w.kind = 'invoke' AND w.status = 'pending' AND cardinality(w.child_execution_ids) > 0
        AND NOT EXISTS (SELECT 1 FROM executions c WHERE c.id = ANY(w.child_execution_ids)
                        AND c.status NOT IN ('completed', 'failed', 'cancelled'))
      LIMIT ${batchSize}`);
    const children = await this.deps.prisma.execution.findMany({
      where: { id: { in: ids.map((r) => r.id) } },
    });
    for (const child of children) await notifyParent(this.deps, child);
    return children.length;
  }
}
