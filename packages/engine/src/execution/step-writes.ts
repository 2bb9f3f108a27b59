import type { pg } from "@spool/db";
import type { JournalStep, NewStepResult } from "../runtime/journal.js";
import { maxResultBytes } from "../runtime/result-size.js";
import type { Claim } from "./claim.js";
import { type StepWrite, type StoredStepRow, stepWrite, storedStepOf, storeStep } from "./journal-store.js";

/** The most step results one statement writes. */
const MAX_BATCH = 100;

// Purpose: storeStep's statement for several step results at once (of any runs), each row with the
// same rule: first completed write wins, a failure only from the run's current claim. Params: the
// writes as a JSON array (`i` is each one's index; output and error are JSON text or null). Locks:
// each row's (execution_id, step_key) index entry, taken in key order (so two batches never wait on
// each other in a cycle). Result: one row per write, by `i`: the row it wrote (step columns null when
// a completed result already won) and its run's status, dispatch seq and lease (null: run gone).
const STORE_STEPS = `
  WITH input AS (
    SELECT * FROM jsonb_to_recordset($1::jsonb) AS t(
      i int, execution_id uuid, step_key text, seq int, kind text, status text, output text,
      error text, attempts int, started_at timestamptz, claim_seq int, claim_lease int)),
  saved AS (
    INSERT INTO step_results (id, execution_id, step_key, seq, kind, status, output, error, attempts, started_at, completed_at)
    SELECT gen_random_uuid(), i.execution_id, i.step_key, i.seq, i.kind, i.status, i.output::jsonb,
           i.error::jsonb, i.attempts, i.started_at, now()
      FROM input i
     WHERE i.status = 'completed' OR EXISTS (
       SELECT 1 FROM executions e WHERE e.id = i.execution_id AND e.status = 'running'
          AND e.dispatch_seq = i.claim_seq AND e.lease = i.claim_lease)
     ORDER BY i.execution_id, i.step_key
    ON CONFLICT (execution_id, step_key) DO UPDATE
      SET status = EXCLUDED.status, output = EXCLUDED.output, error = EXCLUDED.error,
          attempts = step_results.attempts + EXCLUDED.attempts, completed_at = EXCLUDED.completed_at
      WHERE step_results.status <> 'completed'
    RETURNING execution_id, step_key, seq, kind, status, output, error, attempts)
  SELECT i.i, s.step_key AS "stepKey", s.seq, s.kind, s.status, s.output, s.error, s.attempts,
         e.status AS "executionStatus", e.dispatch_seq AS "executionSeq", e.lease AS "executionLease"
    FROM input i
    LEFT JOIN saved s ON s.execution_id = i.execution_id AND s.step_key = i.step_key
    LEFT JOIN executions e ON e.id = i.execution_id`;

interface Pending {
  write: StepWrite;
  resolve: (step: JournalStep) => void;
  reject: (err: unknown) => void;
}

/**
 * Step results of concurrent runs, written together. A write goes out at once when none is in
 * flight (what a run alone sees: one round trip, as storeStep); the writes that arrive meanwhile go
 * together in one statement when it returns. Under load a worker's runs then share commits instead
 * of each paying its own, which is most of what a step write costs Postgres. Each write keeps
 * storeStep's rules and answer; a statement that fails fails the writes it carried (each run halts
 * as on any failed write, and nothing of them is half stored: one statement is one transaction).
 */
export class StepWrites {
  private queue: Pending[] = [];
  private inFlight = false;

  constructor(private readonly pool: pg.Pool) {}

  /** storeStep, written with whatever other step results are waiting. */
  store(
    executionId: string,
    claim: Claim,
    step: NewStepResult,
    maxBytes: number = maxResultBytes(),
  ): Promise<JournalStep> {
    let write: StepWrite;
    try {
      write = stepWrite(executionId, claim, step, maxBytes);
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ write, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    if (this.inFlight || this.queue.length === 0) return;
    const batch = this.takeBatch();
    this.inFlight = true;
    void this.send(batch).finally(() => {
      this.inFlight = false;
      this.pump();
    });
  }

  /** The next writes to send, oldest first; a second write of the same step waits for the next batch. */
  private takeBatch(): Pending[] {
    const batch: Pending[] = [];
    const keys = new Set<string>();
    const rest: Pending[] = [];
    for (const p of this.queue) {
      const key = `${p.write.executionId}/${p.write.step.stepKey}`;
      if (batch.length < MAX_BATCH && !keys.has(key)) {
        keys.add(key);
        batch.push(p);
      } else {
        rest.push(p);
      }
    }
    this.queue = rest;
    return batch;
  }

  private async send(batch: Pending[]): Promise<void> {
    if (batch.length === 1) {
      const [only] = batch as [Pending];
      const { executionId, claim, step } = only.write;
      // One write alone: storeStep's own prepared statement (the limit was checked when queued).
      await storeStep(this.pool, executionId, claim, step, Number.POSITIVE_INFINITY).then(
        only.resolve,
        only.reject,
      );
      return;
    }
    let rows: (StoredStepRow & { i: number })[];
    try {
      ({ rows } = await this.pool.query<StoredStepRow & { i: number }>({
        name: "spool_store_steps",
        text: STORE_STEPS,
        values: [JSON.stringify(batch.map((p, i) => toInputRow(p.write, i)))],
      }));
    } catch (err) {
      for (const p of batch) p.reject(err);
      return;
    }
    const byIndex = new Map(rows.map((r) => [r.i, r]));
    await Promise.all(
      batch.map((p, i) => storedStepOf(this.pool, p.write, byIndex.get(i)).then(p.resolve, p.reject)),
    );
  }
}

function toInputRow(w: StepWrite, i: number) {
  return {
    i,
    execution_id: w.executionId,
    step_key: w.step.stepKey,
    seq: w.step.seq,
    kind: w.step.kind,
    status: w.step.status,
    output: w.output,
    error: w.error,
    attempts: w.step.attempts,
    started_at: w.step.startedAt.toISOString(),
    claim_seq: w.claim.dispatchSeq,
    claim_lease: w.claim.lease,
  };
}
