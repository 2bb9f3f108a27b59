import type { Execution, NamedStatement, pg } from "@spool/db";
import { FIRST_START_CLAIM, notFound } from "@spool/shared";
import type { EngineDeps } from "../deps.js";
import { CONSUMER_NAME, type FirstRun } from "../dispatch/dispatcher.js";
import { ExecutionAbortedError, type JournalStep, type NewStepResult } from "../runtime/journal.js";
import { executionFields, unprefixed } from "../sql/rows.js";
import { type Claim, claimOf } from "./claim.js";
import {
  executionExists,
  insertRootRun,
  insertRootRunFrom,
  type RootRunParam,
  type RunRequest,
  rootRunRegistration,
} from "./create-executions.js";
import {
  notThisClaims,
  STEP_WRITE_ANSWER,
  type StepWriteRow,
  savedStep,
  stepWriteValues,
  storedStep,
  storeStep,
} from "./journal-store.js";
import { startedAsInserted, takenColumns } from "./start-execution.js";
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
 *
 * A new run an API sends to an in-cluster worker process before inserting it (NewRun, for a caller
 * that waits for its finish: in-cluster/direct-runs.ts) goes one step further the same way: its first
 * step's write also inserts it, already started on this process and held by it. Its API, having
 * heard nothing for a second, inserts the same row (insertNewRunOn: started on that process, held
 * by it, as an API that inserts first starts an in-cluster run); the process's write then takes the
 * row over as its own, so a process that is merely slow runs nothing twice, and one that is gone or
 * frozen has the run handed to its job as any run it holds. A row that moved on by then (handed to
 * its job) stops the process, its completed result kept as above. Until the insert nobody can ask for
 * the run (its id is only answered with its result), and nothing but the process and the API hold
 * its request: should both die, the run is lost, as is any request whose answer never came.
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

// The insert of a NewRun already started on the process `holder` (as INSERT_ROOT_RUN_IN_CLUSTER
// leaves it); a row with its id already there is returned as inserted if it is exactly that (its API
// inserted it for the process), and not at all otherwise. `p` names the insert's params.
const insertNewRun = (p: RootRunParam, worker: string, takenAt: string, holder: string) => `
  r AS (${rootRunRegistration(p)}),
  inserted AS (${insertRootRunFrom("r", {
    p,
    onConflict: `ON CONFLICT (id) DO UPDATE SET updated_at = executions.updated_at
     WHERE executions.status = '${FIRST_START.to}' AND executions.dispatch_seq = ${FIRST_START_CLAIM.dispatchSeq}
       AND executions.lease = ${FIRST_START_CLAIM.lease}
       AND executions.push_holder = EXCLUDED.push_holder`,
    start: startedAsInserted(`${worker}::uuid`, takenAt, holder),
    returning: executionFields("executions", STARTED),
  })})`;

// Purpose: a NewRun's insert on its own (by its process, or by its API for that process, or by the API
// that pushed it to a push worker: insertNewRunOnPushWorker). Params:
// INSERT_ROOT_RUN's $1–$16, worker, taken at, holder. Locks: the row, when it was there. Result: one
// row: whether its workflow is registered and, when inserted or taken over, the row ("started.*").
const INSERT_NEW = `
  WITH ${insertNewRun((n) => `$${n}`, "$17", "$18", "$19")}
  SELECT EXISTS (SELECT 1 FROM r) AS registered, t.* FROM (SELECT 1) one LEFT JOIN inserted t ON true`;

// Purpose: a NewRun's first step's write with its insert, in one round trip: inserted as in
// INSERT_NEW, the step stored (a failed result only if inserted). Params: $1–$9 of stepWriteValues,
// INSERT_ROOT_RUN's $2–$16 as $10–$24, worker, taken at, holder. Locks: the step's (execution_id,
// step_key) index entry. Result: one row: INSERT_NEW's, with the stored step (STEP_WRITE_ANSWER's).
const INSERT_NEW_WITH_STEP = `
  WITH ${insertNewRun((n) => (n === 1 ? "$1" : `$${n + 8}`), "$25", "$26", "$27")},
  ${savedStep("EXISTS (SELECT 1 FROM inserted)")}
  SELECT EXISTS (SELECT 1 FROM r) AS registered, s.step_key AS "stepKey", s.seq, s.kind, s.status,
         s.output, s.error, s.attempts, t.*
    FROM (SELECT 1) one LEFT JOIN saved s ON true LEFT JOIN inserted t ON true`;

/** The most bytes of JSON input a new run sent before its insert carries (a larger one is inserted first). */
const MAX_NEW_RUN_INPUT_BYTES = 4096;

/**
 * Whether a new run may go to a worker before its insert: its input is small, and Postgres takes its
 * JSON (no \u0000, no lone surrogate), so that the insert cannot refuse what already runs.
 */
export function mayGoBeforeInsert(request: RunRequest): boolean {
  const input = JSON.stringify(request.input ?? {});
  if (Buffer.byteLength(input) > MAX_NEW_RUN_INPUT_BYTES) return false;
  // JSON.stringify escapes only these among what jsonb refuses.
  return [
    input,
    JSON.stringify(request.initialState ?? null),
    JSON.stringify(request.channelContext ?? null),
  ].every((json) => !/\\u(0000|d[89a-f])/i.test(json));
}

/** A new plain root run an API sent to this process before inserting it (see above). */
export interface NewRun {
  id: string;
  projectId: string;
  request: RunRequest;
  /** Its workflow's queue as the API last read it: the run's lane and its job's queue. */
  queueName: string;
  /** When the API took the request: the run's created_at. */
  createdAt: Date;
}

/** What a taking statement answers: the started row's fields ("started.*") when it took the run. */
type TakeRow = Record<string, unknown>;

/** How a deferred run is taken: on its own, or with its first step's write. */
export interface Taking {
  alone(): NamedStatement;
  /** The statement that writes the step (`stepValues`: its $1–$9) and takes the run. */
  withStep(stepValues: unknown[]): NamedStatement;
  /** The claim the run stood under before it was taken: a step of a lost run is stored under it. */
  before: Claim;
  /** Why a take took nothing, from its answer. */
  whyNotTaken(row: TakeRow | undefined): Error;
}

/** A job's run, queued exactly as its job was made, taken by the job's first delivery. */
export function startTaking(job: DeferredJob): Taking {
  const params = () => [
    job.dispatchSeq,
    job.first.lease,
    job.workerId,
    job.takenAt,
    new Date(),
    FIRST_START.from,
  ];
  return {
    alone: () => ({ name: "spool_take_first", text: TAKE_FIRST, values: [job.executionId, ...params()] }),
    withStep: (stepValues) => ({
      name: "spool_take_with_step",
      text: TAKE_WITH_STEP,
      values: [...stepValues, ...params()],
    }),
    before: { dispatchSeq: job.dispatchSeq, lease: job.first.lease },
    whyNotTaken: (row) => {
      const run = row as Partial<Pick<StepWriteRow, "executionStatus" | "executionSeq" | "executionLease">>;
      // Still queued for this very job, yet not as the job was made: never completed as stale (that
      // would strand the run, its job id taken), but failed, so BullMQ retries it with the usual start.
      if (
        run?.executionStatus === "queued" &&
        run.executionSeq === job.dispatchSeq &&
        run.executionLease !== job.first.lease
      ) {
        return new Error("the run is queued for this job but not as the job was made; retrying its start");
      }
      // Exactly as made, yet not taken: it moved on (a cancel, a redelivery's start) while the take
      // waited for its lock.
      if (run?.executionStatus === "queued")
        return new ExecutionAbortedError("execution moved on before it started");
      return notThisClaims(row && (run as StepWriteRow));
    },
  };
}

/** INSERT_NEW's statement: `run` inserted started on the process `on` (its worker row and name). */
const insertNewStatement = (run: NewRun, on: { workerId: string; name: string }, takenAt: Date) => ({
  name: "spool_insert_new",
  text: INSERT_NEW,
  values: [...insertValuesOf(run), on.workerId, takenAt, on.name],
});
const insertValuesOf = (run: NewRun) =>
  insertRootRun(run.projectId, run.request, run.id, run.createdAt).statement.values;

/**
 * A sent run its process has not inserted within the bound, inserted by its API as that process would
 * (`on`): started on it and held by it, for the process to take over or, should it be gone, frozen or
 * never have got the message, for the rounds that watch holders to hand to its job. Nothing when it
 * is in Postgres already; throws not found when its workflow is not registered.
 */
export async function insertNewRunOn(
  pool: pg.Pool,
  run: NewRun,
  on: { workerId: string; name: string },
): Promise<void> {
  if (await executionExists(pool, run.id)) return;
  const { rows } = await pool.query<TakeRow>(insertNewStatement(run, on, new Date()));
  if (rows[0]?.registered === false) throw notFound("workflow", run.request.workflowId);
}

/**
 * A NewRun already pushed to the push worker `workerId` (push-dispatcher.ts), inserted started on it
 * and held by this process (`holder`), as INSERT_ROOT_RUN_ON_PUSH_WORKER leaves a run it starts: the
 * started row. The worker's row is neither locked nor counted (push_starts): inside a group commit
 * a wait for that lock would hold up every statement of the group, and the worker's own 429 bounds
 * these pushes anyway. Throws not found when its workflow is not registered.
 */
export async function insertNewRunOnPushWorker(
  pool: pg.Pool,
  run: NewRun,
  workerId: string,
  holder: string,
): Promise<Execution> {
  const { rows } = await pool.query<TakeRow>(
    insertNewStatement(run, { workerId, name: holder }, run.createdAt),
  );
  const row = rows[0];
  if (row?.registered === false) throw notFound("workflow", run.request.workflowId);
  const started = row && unprefixed<Execution>(row, STARTED);
  // A fresh id is never there already; should it be, the run is not this insert's.
  if (!started?.id) throw new Error(`execution ${run.id} was there before its insert`);
  return started;
}

/** A NewRun, inserted started on this process (registered as `workerId`), taken at `takenAt`. */
export function insertTaking(run: NewRun, workerId: string, takenAt: Date): Taking {
  const [, ...insertValues] = insertValuesOf(run);
  const params = [workerId, takenAt, CONSUMER_NAME];
  return {
    alone: () => insertNewStatement(run, { workerId, name: CONSUMER_NAME }, takenAt),
    withStep: (stepValues) => ({
      name: "spool_insert_new_with_step",
      text: INSERT_NEW_WITH_STEP,
      values: [...stepValues, ...insertValues, ...params],
    }),
    // A claim no row of it ever stands under (a moved-on run is never running at lease 0): a lost
    // run's completed step is kept for whoever runs it, nothing else.
    before: { dispatchSeq: 0, lease: 0 },
    whyNotTaken: (row) =>
      row?.registered === false
        ? notFound("workflow", run.request.workflowId)
        : new ExecutionAbortedError("the run moved on before this process inserted it"),
  };
}

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

/** One run's deferred start (see above): a job's, or a NewRun's insert. */
export class DeferredStart {
  private state: State = { kind: "deferred" };
  private readonly timer: NodeJS.Timeout;
  private disposed = false;

  private readonly executionId: string;
  private readonly taking: Taking;

  constructor(
    private readonly deps: Pick<EngineDeps, "pool" | "metrics">,
    /** A job's run (taken as startTaking does), or any run and how it is taken. */
    run: DeferredJob | { executionId: string; taking: Taking },
    /** Called once, when the run is taken (by a step's write or on its own). */
    private readonly onStarted: (row: Execution) => void,
    deferMs = DEFERRED_START_MS,
  ) {
    this.executionId = run.executionId;
    this.taking = "taking" in run ? run.taking : startTaking(run);
    // A failure is kept in the state: the run's next write or settle sees it.
    this.timer = setTimeout(() => void this.started().catch(() => {}), deferMs);
    this.timer.unref();
  }

  /** The journal's step store (StepStore): the first step's write also takes the run. */
  readonly saveStep = async (step: NewStepResult, maxBytes: number): Promise<JournalStep> => {
    for (;;) {
      const s = this.state;
      if (s.kind === "started") return storeStep(this.deps.pool, this.executionId, s.claim, step, maxBytes);
      if (s.kind === "lost") {
        // A completed result is kept for whoever runs the run now (first write wins; a retry of this
        // job adopts it when a write failed); this job stops.
        if (s.error instanceof ExecutionAbortedError)
          return storeStep(this.deps.pool, this.executionId, this.taking.before, step, maxBytes);
        if (step.status === "completed")
          await storeStep(this.deps.pool, this.executionId, this.taking.before, step, maxBytes).catch(
            () => {},
          );
        throw s.error;
      }
      if (s.kind === "writing") {
        await s.done.catch(() => {});
        continue;
      }
      const writing = this.take(
        this.taking.withStep(stepWriteValues(this.executionId, step, maxBytes)),
      ) as Promise<StepWriteRow & TakeRow>;
      this.state = { kind: "writing", done: writing };
      const row = await writing;
      return storedStep(this.deps.pool, this.executionId, step.stepKey, row);
    }
  };

  /**
   * The run as this job started it, its start written now if it was not yet. Throws
   * ExecutionAbortedError when the run moved on before it was taken (cancelled, timed out, started
   * by a redelivery of the job, inserted by its API), and the write's error when it failed (the job
   * is retried).
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
      const writing = this.take(this.taking.alone());
      this.state = { kind: "writing", done: writing };
      await writing.catch(() => {});
    }
  }

  /** The job is over: no timer starts the run for it any more, and a start in flight is not reported. */
  dispose(): void {
    this.disposed = true;
    clearTimeout(this.timer);
  }

  /** Runs a taking statement; the state ends started or lost. */
  private async take(statement: NamedStatement): Promise<TakeRow> {
    let row: TakeRow | undefined;
    try {
      row = (await this.deps.pool.query<TakeRow>(statement)).rows[0];
    } catch (error) {
      this.state = { kind: "lost", error };
      throw error;
    }
    const started = row && unprefixed<Execution>(row, STARTED);
    if (!row || !started?.id) {
      const error = this.taking.whyNotTaken(row);
      this.state = { kind: "lost", error };
      throw error;
    }
    clearTimeout(this.timer);
    this.state = { kind: "started", row: started, claim: claimOf(started) };
    this.deps.metrics.runStarted(started);
    if (!this.disposed) this.onStarted(started);
    return row;
  }
}
