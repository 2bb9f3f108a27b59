import type { Execution } from "@spool/db";
import type { EngineDeps } from "../deps.js";
import type { FirstRun } from "../dispatch/dispatcher.js";
import { ExecutionAbortedError, type JournalStep, type NewStepResult } from "../runtime/journal.js";
import { executionFields, unprefixed } from "../sql/rows.js";
import { type Claim, claimOf } from "./claim.js";
import {
  notThisClaims,
  STEP_WRITE_ANSWER,
  type StepWriteRow,
  savedStep,
  stepWriteValues,
  storedStep,
  storeStep,
} from "./journal-store.js";
import { takenColumns } from "./start-execution.js";
import { rawTransition } from "./transition.js";

/*
 * A new run's first start, written with its first step: one commit and one round trip less per run.
 *
 * The run's first job carries what the start would read (FirstRun: its input, its lease as
 * inserted), so the worker replays the workflow at once and its first step's write also takes the
 * run: queued → running under a new lease, only if the run is still exactly as the job was made
 * (dispatch sequence and lease). Until then the run shows `queued`; a start not written after
 * DEFERRED_START_MS (a long first step, an LLM call) is written on its own, and so is one before any
 * other write (a sleep, a wait, a child, the completion of a run without steps).
 *
 * Only the job's first delivery may defer its start: a job BullMQ delivers again (its worker died or
 * stalled) takes the ordinary claiming start, whose new lease fences the first worker, whose
 * deferred start then finds the run moved on. Nothing else can run the run meanwhile: its job id is
 * unique, and a sweep's re-enqueue under it is a no-op while the job is active.
 *
 * What it gives up, and why that is safe:
 * - A run cancelled (or timed out) before it started loses its waiting job (after-finish.ts). A
 *   cancel that lands after a worker took the job is seen at the first step's write, as for a
 *   running run: the step's result is kept, the run stops there.
 * - The start does not count a lane limit: the API sends FirstRun only for a lane that had none at
 *   the insert, and a job older than MAX_DEFERRED_JOB_AGE_MS starts as usual, so a limit set on a
 *   lane counts every run started more than a second later.
 */

/** How long a deferred start waits for the run's first step before it is written on its own. */
const DEFERRED_START_MS = 50;
/** A first job picked up later than this after its enqueue is started as usual. */
export const MAX_DEFERRED_JOB_AGE_MS = 1000;

const FIRST_START = rawTransition(["queued"], "running");
const STARTED = "started.";

/** The `taken` CTE: the run, queued exactly as its job was made, becomes running under a new lease. */
const taken = (p: {
  id: string;
  seq: string;
  lease: string;
  worker: string;
  takenAt: string;
  now: string;
  from: string;
}) => `
  taken AS (
    UPDATE executions e SET ${takenColumns(p.worker, p.takenAt, p.now)}
     WHERE e.id = ${p.id}::uuid AND e.dispatch_seq = ${p.seq} AND e.lease = ${p.lease}
       AND e.status = ANY(${p.from}::text[])
    RETURNING ${executionFields("e", STARTED)})`;

// Purpose: a deferred start on its own. Params: execution, dispatch seq, lease as inserted, worker,
// taken at, now, from-statuses. Locks: the execution row. Result: one row (none if the run is gone):
// the run as it was ("executionStatus", "executionSeq") and, when taken, the started row ("started.*").
const TAKE_FIRST = `
  WITH ${taken({ id: "$1", seq: "$2", lease: "$3", worker: "$4", takenAt: "$5", now: "$6", from: "$7" })}
  SELECT e.status AS "executionStatus", e.dispatch_seq AS "executionSeq", e.lease AS "executionLease", t.*
  FROM executions e LEFT JOIN taken t ON true WHERE e.id = $1::uuid`;

// Purpose: the first step's write with the deferred start, in one round trip: the run is taken as in
// TAKE_FIRST and the step stored (a failed result only if taken). Params: $1–$9 of stepWriteValues,
// dispatch seq, lease as inserted, worker, taken at, now, from-statuses. Locks: the execution row, the
// step's (execution_id, step_key) index entry. Result: one row (none if the run is gone): the step
// write's answer (STEP_WRITE_ANSWER, the run as it was) and, when taken, the started row.
const TAKE_WITH_STEP = `
  WITH ${taken({ id: "$1", seq: "$10", lease: "$11", worker: "$12", takenAt: "$13", now: "$14", from: "$15" })},
  ${savedStep("EXISTS (SELECT 1 FROM taken)")}
  SELECT ${STEP_WRITE_ANSWER}, t.*
  FROM executions e LEFT JOIN saved s ON true LEFT JOIN taken t ON true
  WHERE e.id = $1::uuid`;

export interface DeferredJob {
  executionId: string;
  dispatchSeq: number;
  first: FirstRun;
  workerId: string | null;
  /** When the worker took the job: the run's started_at. */
  takenAt: Date;
}

/** A job's delivery, as its queue tells it. */
export interface Delivery {
  /** BullMQ delivers it for the first time (never stalled, failed or taken back before). */
  first: boolean;
  /** When it was enqueued (ms since the epoch). */
  enqueuedAt: number;
}

/**
 * Whether a run job may defer its start (see above). Its age is read on two clocks (the producer's
 * and this process's): one more than a second apart never defers, so the window stays under two.
 */
export const mayDefer = (first: FirstRun | undefined, delivery: Delivery | undefined): first is FirstRun =>
  first !== undefined &&
  delivery?.first === true &&
  Math.abs(Date.now() - delivery.enqueuedAt) < MAX_DEFERRED_JOB_AGE_MS;

type State =
  | { kind: "deferred" }
  | { kind: "writing"; done: Promise<unknown> }
  | { kind: "started"; row: Execution; claim: Claim }
  /** The run moved on before it was taken (ExecutionAbortedError), or the write failed. */
  | { kind: "lost"; error: unknown };

/** One job's deferred start (see above). */
export class DeferredStart {
  private state: State = { kind: "deferred" };
  private readonly timer: NodeJS.Timeout;
  private disposed = false;

  constructor(
    private readonly deps: Pick<EngineDeps, "pool" | "metrics">,
    private readonly job: DeferredJob,
    /** Called once, when the run is taken (by a step's write or on its own). */
    private readonly onStarted: (row: Execution) => void,
    deferMs = DEFERRED_START_MS,
  ) {
    // A failure is kept in the state: the run's next write or settle sees it.
    this.timer = setTimeout(() => void this.started().catch(() => {}), deferMs);
    this.timer.unref();
  }

  /** The journal's step store (StepStore): the first step's write also takes the run. */
  readonly saveStep = async (step: NewStepResult, maxBytes: number): Promise<JournalStep> => {
    for (;;) {
      const s = this.state;
      if (s.kind === "started")
        return storeStep(this.deps.pool, this.job.executionId, s.claim, step, maxBytes);
      if (s.kind === "lost") {
        // A completed result is kept for whoever runs the run now (first write wins; a retry of this
        // job adopts it when a write failed); this job stops.
        if (s.error instanceof ExecutionAbortedError)
          return storeStep(this.deps.pool, this.job.executionId, this.asInserted(), step, maxBytes);
        if (step.status === "completed")
          await storeStep(this.deps.pool, this.job.executionId, this.asInserted(), step, maxBytes).catch(
            () => {},
          );
        throw s.error;
      }
      if (s.kind === "writing") {
        await s.done.catch(() => {});
        continue;
      }
      const values = stepWriteValues(this.job.executionId, step, maxBytes);
      const writing = this.take<StepWriteRow>("spool_take_with_step", TAKE_WITH_STEP, values);
      this.state = { kind: "writing", done: writing };
      const row = await writing;
      return storedStep(this.deps.pool, this.job.executionId, step.stepKey, row);
    }
  };

  /**
   * The run as this job started it, its start written now if it was not yet. Throws
   * ExecutionAbortedError when the run moved on before it was taken (cancelled, timed out, started
   * by a redelivery of the job), and the write's error when it failed (the job is retried).
   */
  async started(): Promise<Execution> {
    for (;;) {
      const s = this.state;
      if (s.kind === "started") return s.row;
      if (s.kind === "lost") throw s.error;
      if (s.kind === "writing") {
        await s.done.catch(() => {});
        continue;
      }
      const writing = this.take<StepWriteRow>("spool_take_first", TAKE_FIRST, [this.job.executionId]);
      this.state = { kind: "writing", done: writing };
      await writing.catch(() => {});
    }
  }

  /** The job is over: no timer starts the run for it any more, and a start in flight is not reported. */
  dispose(): void {
    this.disposed = true;
    clearTimeout(this.timer);
  }

  private asInserted(): Claim {
    return { dispatchSeq: this.job.dispatchSeq, lease: this.job.first.lease };
  }

  /** Runs a taking statement (`values` are its leading params); the state ends started or lost. */
  private async take<R extends Pick<StepWriteRow, "executionStatus" | "executionSeq" | "executionLease">>(
    name: string,
    text: string,
    values: unknown[],
  ): Promise<R> {
    let row: (R & Record<string, unknown>) | undefined;
    try {
      const { rows } = await this.deps.pool.query<R & Record<string, unknown>>({
        name,
        text,
        values: [
          ...values,
          this.job.dispatchSeq,
          this.job.first.lease,
          this.job.workerId,
          this.job.takenAt,
          new Date(),
          FIRST_START.from,
        ],
      });
      row = rows[0];
    } catch (error) {
      this.state = { kind: "lost", error };
      throw error;
    }
    const started = row && unprefixed<Execution>(row, STARTED);
    if (!row || !started?.id) {
      const error = this.whyNotTaken(row);
      this.state = { kind: "lost", error };
      throw error;
    }
    clearTimeout(this.timer);
    this.state = { kind: "started", row: started, claim: claimOf(started) };
    this.deps.metrics.runStarted(started);
    if (!this.disposed) this.onStarted(started);
    return row;
  }

  /** Why a take found nothing to take, from the run as the statement began (`row`). */
  private whyNotTaken(
    row: Pick<StepWriteRow, "executionStatus" | "executionSeq" | "executionLease"> | undefined,
  ): Error {
    // Still queued for this very job, yet not as the job was made: never completed as stale (that
    // would strand the run, its job id taken), but failed, so BullMQ retries it with the usual start.
    if (
      row?.executionStatus === "queued" &&
      row.executionSeq === this.job.dispatchSeq &&
      row.executionLease !== this.job.first.lease
    ) {
      return new Error("the run is queued for this job but not as the job was made; retrying its start");
    }
    // Exactly as made, yet not taken: it moved on (a cancel, a redelivery's start) while the take
    // waited for its lock.
    if (row?.executionStatus === "queued")
      return new ExecutionAbortedError("execution moved on before it started");
    return notThisClaims(row);
  }
}
