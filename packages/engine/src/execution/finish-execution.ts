import { type Execution, jsonOrNull, type Prisma } from "@spool/db";
import type { SerializedError } from "@spool/shared";
import { type EngineDeps, TX_OPTIONS } from "../deps.js";
import type { DispatchRequest } from "../dispatch/dispatcher.js";
import { backoffDelay } from "../runtime/backoff.js";
import {
  type NewStepResult,
  type StepRecord,
  StepSupersededError,
  storedAsWritten,
} from "../runtime/journal.js";
import { executionFields } from "../sql/rows.js";
import { spanRowsParam, upsertSpansFromJson } from "../traces/record-spans.js";
import { executionSpan, stepSpan } from "../traces/span-rows.js";
import { afterFinish, afterTurn } from "./after-finish.js";
import { afterCancel, cancelTree } from "./cancel-execution.js";
import { type Claim, heldUnder } from "./claim.js";
import { closePendingWaits } from "./close-waits.js";
import { runDispatch } from "./create-executions.js";
import { storeStep } from "./journal-store.js";
import type { ExecutionStatus } from "./statuses.js";
import { rawTransition, transition } from "./transition.js";

const COMPLETE = rawTransition(["running"], "completed");

// Purpose: running → completed with the run's trace (its own span and the spans of its steps not
// written yet) and the last step's result the replay held back (if any), in one round trip. Only for
// a run without waits whose every stored step ran in this job: anything parked or answered from
// outside, or a step another job ran, takes completeExecution's transaction. Params: execution,
// dispatch seq, lease, result, now, from-statuses, span rows (spanRowsParam), the keys of the steps
// this job ran, then the held-back step (null key: none): key, seq, kind, output, attempts, started
// at. Locks: the execution row, the step's (execution_id, step_key) index entry. Result: the
// completed row, or none (not this claim's any more, it has waits, a step is not covered, or another
// worker's result for the held-back step was stored first). The step is stored either way, first
// completed write wins, as storeStep does: the caller's fallback finds it.
const COMPLETE_WITHOUT_WAITS = `
  WITH saved AS (
    INSERT INTO step_results (id, execution_id, step_key, seq, kind, status, output, attempts, started_at, completed_at)
    SELECT gen_random_uuid(), $1, $9, $10, $11, 'completed', $12::jsonb, $13, $14, $5
     WHERE $9::text IS NOT NULL
    ON CONFLICT (execution_id, step_key) DO UPDATE
      SET status = EXCLUDED.status, output = EXCLUDED.output, error = NULL,
          attempts = step_results.attempts + EXCLUDED.attempts, completed_at = EXCLUDED.completed_at
      WHERE step_results.status <> 'completed'
    RETURNING 1),
  done AS (
    UPDATE executions e
       SET status = '${COMPLETE.to}', result = $4::jsonb, completed_at = $5, worker_id = NULL,
           error = NULL, updated_at = $5
     WHERE e.id = $1 AND e.status = ANY($6::text[]) AND e.dispatch_seq = $2 AND e.lease = $3
       AND NOT EXISTS (SELECT 1 FROM waits w WHERE w.execution_id = $1)
       AND NOT EXISTS (SELECT 1 FROM step_results s WHERE s.execution_id = $1 AND s.step_key <> ALL($8::text[]))
       AND ($9::text IS NULL OR EXISTS (SELECT 1 FROM saved))
    RETURNING ${executionFields("e")}),
  spans AS (${upsertSpansFromJson("$7", "EXISTS (SELECT 1 FROM done)")})
  SELECT * FROM done`;

/**
 * The hot path of a run's end: a worker holding the spans of every stored step (it ran them all in
 * this job) completes the run in one statement. Null when that does not apply (the run has waits, a
 * step it did not run, or is no longer this claim's): the caller takes completeExecution.
 */
async function completeWithoutWaits(
  deps: EngineDeps,
  args: {
    started: Execution;
    claim: Claim;
    result: unknown;
    steps: StepRecord[];
    ran: string[];
    lastStep?: NewStepResult;
  },
): Promise<Execution | null> {
  const now = new Date();
  const result = args.result === undefined || args.result === null ? null : args.result;
  const predicted: Execution = {
    ...args.started,
    status: COMPLETE.to,
    result: result as Execution["result"],
    completedAt: now,
    workerId: null,
    error: null,
    updatedAt: now,
  };
  // The rows the statement writes only if the run completes; the execution span is the completed
  // row's (what syncExecutionSpans would derive from it).
  const spans = [executionSpan(predicted), ...args.steps.map((r) => stepSpan(predicted, r))];
  const last = args.lastStep;
  const { rows } = await deps.pool.query<Execution>({
    name: "spool_complete_without_waits",
    text: COMPLETE_WITHOUT_WAITS,
    values: [
      args.started.id,
      args.claim.dispatchSeq,
      args.claim.lease,
      result === null ? null : JSON.stringify(result),
      now,
      COMPLETE.from,
      spanRowsParam(spans),
      args.ran,
      last?.stepKey ?? null,
      last?.seq ?? null,
      last?.kind ?? null,
      last ? JSON.stringify(last.output ?? null) : null,
      last?.attempts ?? null,
      last?.startedAt ?? null,
    ],
  });
  const row = rows[0];
  if (!row) return null;
  deps.traces.publish(spans);
  await afterFinish(deps, row);
  return row;
}

/**
 * running → completed. Null when the run was no longer this dispatch's (cancelled, handed back).
 * `fresh` is the worker's run as it started it, the steps whose spans it has not written yet, and the
 * keys of every step it ran: when those cover every stored step and the run has no waits, it ends
 * in one round trip. `lastStep` is a completed step result the replay held back (holdLastWrite):
 * stored first, with first-write-wins; when another worker's result for it won, this throws
 * StepSupersededError (the worker replays the run), and ExecutionAbortedError when the run is no
 * longer this claim's.
 */
export async function completeExecution(
  deps: EngineDeps,
  args: {
    executionId: string;
    claim: Claim;
    result: unknown;
    fresh?: { started: Execution; steps: StepRecord[]; ran: string[] };
    lastStep?: NewStepResult;
  },
): Promise<Execution | null> {
  const { lastStep } = args;
  if (args.fresh) {
    const done = await completeWithoutWaits(deps, {
      ...args.fresh,
      claim: args.claim,
      result: args.result,
      lastStep,
    });
    if (done) return done;
    // Not applicable: write the steps' spans as the span writer would have, then the general path.
    await deps.traces.recordSteps(args.fresh.started, args.fresh.steps);
  }
  if (lastStep) {
    // Stored now (or found, when the statement above stored it), as the replay would have.
    const stored = await storeStep(deps.pool, args.executionId, args.claim, lastStep);
    if (!storedAsWritten(stored, lastStep)) throw new StepSupersededError(lastStep.stepKey);
  }
  const outcome = await deps.prisma.$transaction(async (tx) => {
    const row = await transition(tx, {
      executionId: args.executionId,
      from: ["running"],
      to: "completed",
      where: heldUnder(args.claim),
      data: {
        result: jsonOrNull(args.result),
        completedAt: new Date(),
        workerId: null,
        error: jsonOrNull(null),
      },
    });
    if (!row) return null;
    // A branch still parked when the workflow returned (e.g. the loser of a Promise.race) must
    // not go on matching events and firing timers for a finished run.
    const orphans = await cancelTree(deps, tx, await closePendingWaits(tx, [row.id]));
    return { row, orphans, spans: await deps.traces.syncInTransaction(tx, row) };
  }, TX_OPTIONS);
  if (!outcome) return null;
  deps.traces.publish(outcome.spans);
  await afterFinish(deps, outcome.row);
  await afterCancel(deps, outcome.orphans);
  return outcome.row;
}

/** Run-level retry backoff: 1 s, 2 s, 4 s … capped at 5 min (jittered). */
const RUN_RETRY_BACKOFF = { initial: 1000, max: 300_000, factor: 2 };

/**
 * A failed attempt. The run-level retry policy lives here, once for every kind of worker: a
 * `retry.retryable` failure of an attempt within `retry.maxRetries` goes back to queued as
 * attempt+1, delivered by a delayed job with exponential backoff; anything else fails the run for
 * good and its parent (if waiting on it) is told. `from` lets sweeps fail runs that are not running
 * (e.g. a run timeout while waiting).
 */
export async function failExecution(
  deps: EngineDeps,
  args: {
    executionId: string;
    error: SerializedError;
    /** The worker's claim; sweeps (e.g. a run timeout) fail a run whoever holds it. */
    claim?: Claim;
    retry?: { retryable: boolean; maxRetries: number };
    from?: ExecutionStatus[];
  },
): Promise<Execution | null> {
  const guard = heldUnder(args.claim);
  const outcome = await deps.prisma.$transaction(async (tx) => {
    // A retry only while attempts are left: attempt n is followed by retry n while n <= maxRetries.
    const retried = args.retry?.retryable
      ? await transition(tx, {
          executionId: args.executionId,
          from: ["running"],
          to: "queued",
          where: { ...guard, attempt: { lte: args.retry.maxRetries } },
          data: {
            attempt: { increment: 1 },
            dispatchSeq: { increment: 1 },
            error: jsonOrNull(args.error),
            workerId: null,
          },
        })
      : null;
    const row =
      retried ??
      (await transition(tx, {
        executionId: args.executionId,
        from: args.from ?? ["running"],
        to: "failed",
        where: guard,
        data: { error: jsonOrNull(args.error), completedAt: new Date(), workerId: null },
      }));
    if (!row) return null;
    // A retry keeps its waits: the next attempt replays onto them (a running child is adopted).
    if (retried) await clearFailedSteps(tx, row.id);
    const orphans = await cancelTree(deps, tx, retried ? [] : await closePendingWaits(tx, [row.id]));
    return { row, retried: retried !== null, orphans, spans: await deps.traces.syncInTransaction(tx, row) };
  }, TX_OPTIONS);
  if (!outcome) return null;
  deps.traces.publish(outcome.spans);
  if (outcome.retried) {
    deps.metrics.runRetried(outcome.row);
    const delayMs = backoffDelay(outcome.row.attempt - 1, RUN_RETRY_BACKOFF);
    await deps.dispatcher.dispatch([{ ...runDispatch(outcome.row), delayMs }]);
    await afterTurn(deps, outcome.row);
  } else {
    await afterFinish(deps, outcome.row);
    await afterCancel(deps, outcome.orphans);
  }
  return outcome.row;
}

/**
 * running → queued for another worker (drain on shutdown, a worker that stopped heartbeating, or
 * one that does not have the workflow). A new dispatch sequence makes the old job stale, so only
 * the new one runs it; `delayMs` holds the new job back (so the same worker does not take it
 * straight back).
 */
export async function releaseExecution(
  deps: EngineDeps,
  args: { executionId: string; claim?: Claim; delayMs?: number },
): Promise<Execution | null> {
  const outcome = await deps.prisma.$transaction(async (tx) => {
    const row = await transition(tx, {
      executionId: args.executionId,
      from: ["running"],
      to: "queued",
      where: heldUnder(args.claim),
      data: { dispatchSeq: { increment: 1 }, workerId: null },
    });
    return row ? { row, spans: await deps.traces.syncInTransaction(tx, row) } : null;
  }, TX_OPTIONS);
  if (!outcome) return null;
  deps.traces.publish(outcome.spans);
  await deps.dispatcher.dispatch([{ ...runDispatch(outcome.row), delayMs: args.delayMs }]);
  await afterTurn(deps, outcome.row);
  return outcome.row;
}

export type { DispatchRequest };

/**
 * The new attempt runs the failed steps again; completed ones stay done. A failed wait step (a
 * timeout, a failed child) goes with its settled wait row, or the next attempt would park on a wait
 * that can never fire again.
 */
async function clearFailedSteps(tx: Prisma.TransactionClient, executionId: string): Promise<void> {
  const failed = await tx.stepResult.findMany({
    where: { executionId, status: "failed" },
    select: { stepKey: true },
  });
  const keys = failed.map((f) => f.stepKey);
  if (keys.length === 0) return;
  await tx.stepResult.deleteMany({ where: { executionId, stepKey: { in: keys } } });
  await tx.wait.deleteMany({ where: { executionId, stepKey: { in: keys }, status: { not: "pending" } } });
}
