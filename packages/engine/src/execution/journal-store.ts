import type { PrismaClient, pg } from "@spool/db";
import type { SerializedError } from "@spool/shared";
import {
  ExecutionAbortedError,
  type Journal,
  type JournalStep,
  type JournalWait,
  type NewStepResult,
} from "../runtime/journal.js";
import { maxResultBytes, sizedJson, stepResultTooLarge } from "../runtime/result-size.js";
import type { Claim } from "./claim.js";

/** How a journal stores a step: under the worker's claim, or by a start deferred to the first step. */
export type StepStore = Claim | ((step: NewStepResult, maxBytes: number) => Promise<JournalStep>);

/**
 * The Postgres-backed journal of one execution, as seen by the worker that runs it: from the rows its
 * start already read (one round trip for both), or read now.
 */
export async function loadJournal(
  db: { prisma: PrismaClient; pool: pg.Pool },
  executionId: string,
  store: StepStore,
  loaded?: JournalRows,
): Promise<Journal> {
  const { steps, waits } = loaded ?? (await readJournal(db.prisma, executionId));
  const limit = maxResultBytes();
  return {
    steps: new Map(steps.map((s) => [s.stepKey, toJournalStep(s)])),
    waits: new Map(
      waits.map((w): [string, JournalWait] => [
        w.stepKey,
        { stepKey: w.stepKey, seq: w.seq, kind: w.kind, wakeAt: w.wakeAt },
      ]),
    ),
    saveStep: (step) =>
      typeof store === "function" ? store(step, limit) : storeStep(db.pool, executionId, store, step, limit),
    eventCursor: () => eventCursorOf(db.pool, executionId),
    maxResultBytes: limit,
  };
}

async function readJournal(prisma: PrismaClient, executionId: string): Promise<JournalRows> {
  const [steps, waits] = await Promise.all([
    prisma.stepResult.findMany({ where: { executionId }, orderBy: { seq: "asc" } }),
    prisma.wait.findMany({ where: { executionId, status: "pending" } }),
  ]);
  return { steps, waits };
}

/** A stored step and an open wait as the journal needs them (a job's start reads them with the run). */
export interface JournalRows {
  steps: StepRow[];
  waits: { stepKey: string; seq: number; kind: string; wakeAt: Date | null }[];
}

interface StepRow {
  stepKey: string;
  seq: number;
  kind: string;
  status: string;
  output: unknown;
  error: unknown;
  attempts: number;
}

const toJournalStep = (s: StepRow): JournalStep => ({
  stepKey: s.stepKey,
  seq: s.seq,
  kind: s.kind,
  status: s.status === "completed" ? "completed" : "failed",
  output: s.output ?? null,
  error: (s.error as SerializedError | null) ?? null,
  attempts: s.attempts,
});

/**
 * The step write of a worker (`saved`): a completed result is never overwritten, a failed one (from
 * an earlier attempt) is. A completed result is kept even from a worker that lost the run (the next
 * one adopts it); a failure only when `mayStoreFailure` (SQL) holds, or a stale attempt's late
 * failure would land after a retry cleared failed results and be replayed in the new attempt.
 * Params $1–$9 are stepWriteValues'. Result: the stored row; none when a completed result already won.
 */
export const savedStep = (mayStoreFailure: string) => `saved AS (
    INSERT INTO step_results (id, execution_id, step_key, seq, kind, status, output, error, attempts, started_at, completed_at)
    SELECT gen_random_uuid(), $1::uuid, $2, $3, $4, $5, $6::jsonb, $7::jsonb, $8, $9, now()
    WHERE $5 = 'completed' OR ${mayStoreFailure}
    ON CONFLICT (execution_id, step_key) DO UPDATE
      SET status = EXCLUDED.status, output = EXCLUDED.output, error = EXCLUDED.error,
          attempts = step_results.attempts + EXCLUDED.attempts, completed_at = EXCLUDED.completed_at
      WHERE step_results.status <> 'completed'
    RETURNING step_key, seq, kind, status, output, error, attempts)`;

/** The select list of a step write's answer: the stored step (`saved s`) and the run (`executions e`). */
export const STEP_WRITE_ANSWER = `s.step_key AS "stepKey", s.seq, s.kind, s.status, s.output, s.error, s.attempts,
         e.status AS "executionStatus", e.dispatch_seq AS "executionSeq", e.lease AS "executionLease"`;

/** A step write's answer (STEP_WRITE_ANSWER); the step columns are null when a completed result won. */
export type StepWriteRow = Partial<StepRow> & {
  executionStatus: string;
  executionSeq: number;
  executionLease: number;
};

// Purpose: store the step (never replacing a completed result) and read whether the run is still
// this claim's, in one round trip. Params: execution, key, seq, kind, status, output, error, attempts,
// started_at, claim's dispatch seq, claim's lease. Locks: the (execution_id, step_key) index entry.
// Result: one row (none if the execution is gone).
const STORE_STEP = `
  WITH ${savedStep(`EXISTS (
      SELECT 1 FROM executions WHERE id = $1::uuid AND status = 'running'
        AND dispatch_seq = $10 AND lease = $11)`)}
  SELECT ${STEP_WRITE_ANSWER}
  FROM executions e LEFT JOIN saved s ON true
  WHERE e.id = $1::uuid`;

const READ_STEP = `SELECT step_key AS "stepKey", seq, kind, status, output, error, attempts
  FROM step_results WHERE execution_id = $1 AND step_key = $2`;

/**
 * Stores a step result, first completed write wins: a completed row is never overwritten, a failed
 * one (from an earlier attempt) is. Returns the stored row, which is what the workflow continues
 * with. Then checks the execution is still this claim's to run; if it was cancelled, timed out or
 * handed to another worker (or started again from a redelivered job), the result stays stored (the
 * next worker adopts it) and the run aborts. A result over `maxBytes` of JSON is refused before any
 * write (StepResultTooLargeError): it is never stored, so never read back either.
 */
export async function storeStep(
  pool: pg.Pool,
  executionId: string,
  claim: Claim,
  step: NewStepResult,
  maxBytes: number = maxResultBytes(),
): Promise<JournalStep> {
  const { rows } = await pool.query<StepWriteRow>({
    name: "spool_store_step",
    text: STORE_STEP,
    values: [...stepWriteValues(executionId, step, maxBytes), claim.dispatchSeq, claim.lease],
  });
  const row = rows[0];
  if (
    row?.executionStatus !== "running" ||
    row.executionSeq !== claim.dispatchSeq ||
    row.executionLease !== claim.lease
  ) {
    throw notThisClaims(row);
  }
  return storedStep(pool, executionId, step.stepKey, row);
}

/** Params $1–$9 of a step write (savedStep); throws StepResultTooLargeError for a result over `maxBytes`. */
export function stepWriteValues(executionId: string, step: NewStepResult, maxBytes: number): unknown[] {
  const sized = step.output === undefined ? null : sizedJson(step.output);
  if (sized && step.status === "completed" && sized.bytes > maxBytes) {
    throw stepResultTooLarge(step.stepKey, sized.bytes, maxBytes);
  }
  return [
    executionId,
    step.stepKey,
    step.seq,
    step.kind,
    step.status,
    sized?.json ?? null,
    step.error === undefined ? null : JSON.stringify(step.error),
    step.attempts,
    step.startedAt,
  ];
}

/** Why a step write found the run not the writer's any more (the run as the write saw it). */
export const notThisClaims = (row: Pick<StepWriteRow, "executionStatus"> | undefined) =>
  new ExecutionAbortedError(
    row?.executionStatus === "running" || row?.executionStatus === "queued"
      ? "execution was handed to another worker"
      : `execution is ${row?.executionStatus ?? "gone"}`,
  );

/** The step a write stored, or the completed one that won over it (read now). */
export async function storedStep(
  pool: pg.Pool,
  executionId: string,
  stepKey: string,
  row: StepWriteRow,
): Promise<JournalStep> {
  if (row.stepKey !== null && row.stepKey !== undefined) return toJournalStep(row as StepRow);
  const stored = await pool.query<StepRow>({
    name: "spool_read_step",
    text: READ_STEP,
    values: [executionId, stepKey],
  });
  return toJournalStep(stored.rows[0]!);
}

/** The committed event sequence of an execution's project. */
export async function eventCursorOf(pool: pg.Pool, executionId: string): Promise<bigint> {
  // Purpose: see above. Locks: none (a publish in flight is either committed and counted here, or
  // gets a higher sequence). Result: one row.
  const { rows } = await pool.query<{ sequence: string }>({
    name: "spool_event_cursor",
    text: `SELECT p.event_sequence AS sequence FROM projects p JOIN executions e ON e.project_id = p.id
           WHERE e.id = $1::uuid`,
    values: [executionId],
  });
  return BigInt(rows[0]?.sequence ?? 0);
}

/**
 * Select-list entries with the journal of the execution whose id is `idParam`: its stored steps
 * ("journalSteps") and its open waits ("journalWaits") as JSON arrays (see journalOf).
 */
export const journalColumns = (idParam: string) => `
    (SELECT coalesce(json_agg(json_build_object('stepKey', s.step_key, 'seq', s.seq, 'kind', s.kind,
              'status', s.status, 'output', s.output, 'error', s.error, 'attempts', s.attempts)
              ORDER BY s.seq), '[]')
       FROM step_results s WHERE s.execution_id = ${idParam}) AS "journalSteps",
    (SELECT coalesce(json_agg(json_build_object('stepKey', w.step_key, 'seq', w.seq, 'kind', w.kind,
              'wakeAt', w.wake_at)), '[]')
       FROM waits w WHERE w.execution_id = ${idParam} AND w.status = 'pending') AS "journalWaits"`;

/** A row with journalColumns, split into the execution and its journal. */
export function journalOf<R extends { journalSteps: JournalRows["steps"]; journalWaits: RawWait[] }>(row: R) {
  const { journalSteps, journalWaits, ...rest } = row;
  const journal: JournalRows = {
    steps: journalSteps,
    waits: journalWaits.map((w) => ({ ...w, wakeAt: w.wakeAt === null ? null : new Date(w.wakeAt) })),
  };
  return { rest, journal };
}

/** An open wait as journalColumns reads it (its time still a string). */
export type RawWait = { stepKey: string; seq: number; kind: string; wakeAt: string | null };
