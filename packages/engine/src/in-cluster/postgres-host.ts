import type { Execution } from "@spool/db";
import type { Logger } from "@spool/shared";
import { createRunStream } from "../agents/run-stream.js";
import type { JobData } from "../dispatch/dispatcher.js";
import type { Engine } from "../engine.js";
import { type Claim, claimOf } from "../execution/claim.js";
import type { JournalRows } from "../execution/journal-store.js";
import type { RunHost } from "../runner/run-host.js";
import { showRunningAfterDelay } from "../traces/running-span.js";
import { createSpanWriter } from "../traces/span-writer.js";

/** How long a held run is watched per round before its holder is checked again. */
const HELD_RECHECK_MS = 30_000;

export interface PostgresRunHost extends RunHost {
  /** The claim `start` took (undefined before, or when the job was stale). */
  claim(): Claim | undefined;
}

/**
 * The in-cluster host of one run job: the worker reads and settles the run straight in Postgres
 * through the engine, publishes its live events and step spans in batches, and shows the run as
 * running in its trace once it has gone on for a moment.
 */
export function createPostgresHost(
  engine: Engine,
  job: Extract<JobData, { kind: "run" }>,
  options: { workerId: () => string | null; logger: Logger },
): PostgresRunHost {
  let execution: Execution | undefined;
  let claim: Claim | undefined;
  let loaded: JournalRows | undefined;
  // Whether every step and wait of the run is this job's own: its start found none stored.
  let fresh = false;
  let stream: ReturnType<typeof createRunStream> | undefined;
  let spans: ReturnType<typeof createSpanWriter> | undefined;
  let runningSpan: { settle: () => Promise<void> } | undefined;
  // Keys of the steps this job ran (their spans written by the span writer, or still buffered).
  const ran: string[] = [];
  const warn = (what: string) => (err: unknown) =>
    options.logger.warn({ err: String(err), execution_id: job.executionId }, what);
  const flush = async () => {
    await Promise.all([stream?.flush(), spans?.flush(), runningSpan?.settle()]);
  };
  const held = () => {
    if (!execution || !claim) throw new Error("the run was not started");
    return { execution, claim };
  };

  return {
    claim: () => claim,
    async start() {
      const result = await engine.executions.start(job.executionId, job.dispatchSeq, options.workerId());
      if (result.status === "held") {
        // A live remote worker runs it; this job only came back because the dispatcher that pushed
        // it died. Hold the job until the run moves on, as the dispatcher would have.
        const lease = result.execution.lease;
        for (;;) {
          const now = await engine.executions.untilLeaves(job.executionId, lease, HELD_RECHECK_MS);
          if (now.status !== "running" || now.lease !== lease) return null;
        }
      }
      // Stale, or its lane's partition is full: the run that frees a slot dispatches it again.
      if (result.status === "stale" || result.status === "slot_wait") return null;
      execution = result.execution;
      claim = claimOf(execution);
      loaded = result.journal;
      fresh = loaded !== undefined && loaded.steps.length === 0 && loaded.waits.length === 0;
      const run = {
        projectId: execution.projectId,
        workflowId: execution.workflowId,
        executionId: execution.id,
      };
      stream = createRunStream(engine.events, run, warn("stream publish failed"));
      spans = createSpanWriter(engine.traces, execution, warn("span write failed"));
      runningSpan = showRunningAfterDelay(engine.traces, execution, warn("span sync failed"));
      return {
        input: execution.input,
        execution: {
          id: execution.id,
          workflowId: execution.workflowId,
          attempt: execution.attempt,
          queueName: execution.queueName,
          parentExecutionId: execution.parentExecutionId,
          rootExecutionId: execution.rootExecutionId ?? execution.id,
        },
      };
    },
    journal: () => {
      // What the start read serves the first replay; a replay after a superseded step reads again.
      const rows = loaded;
      if (loaded === undefined) fresh = false;
      loaded = undefined;
      return engine.executions.journal(job.executionId, held().claim, rows);
    },
    storesLastStep: true,
    publish: (event) => stream?.publish(event),
    recordStep: (record) => {
      ran.push(record.stepKey);
      engine.metrics.stepFinished(record.kind, record.endedAt.getTime() - record.startedAt.getTime());
      return spans?.record(record);
    },
    flush,
    async complete(result, lastStep) {
      const { execution: started, claim } = held();
      // A run whose every step ran in this job (none replayed) ends in one round trip, with its last
      // step's result and the spans of its steps (still buffered) written in the same statement.
      if (fresh && spans) {
        await Promise.all([stream?.flush(), runningSpan?.settle()]);
        const { items, written } = await spans.take();
        try {
          const done = await engine.executions.complete(job.executionId, claim, result, {
            fresh: { started, steps: items, ran },
            lastStep,
          });
          return done !== null;
        } finally {
          written();
        }
      }
      await flush();
      return (await engine.executions.complete(job.executionId, claim, result, { lastStep })) !== null;
    },
    async fail(error, retry) {
      await flush();
      const row = await engine.executions.fail({
        executionId: job.executionId,
        claim: held().claim,
        error,
        retry,
      });
      return row === null ? "not_ours" : row.status === "queued" ? "retrying" : "failed";
    },
    async block(waits) {
      await flush();
      return (
        (await engine.executions.block({ executionId: job.executionId, claim: held().claim, waits })) !== null
      );
    },
    notLoaded: () => engine.executions.notLoaded(held().execution, held().claim, options.workerId()),
  };
}
