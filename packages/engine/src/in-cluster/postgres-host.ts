import type { Execution } from "@spool/db";
import type { Logger } from "@spool/shared";
import { createRunStream } from "../agents/run-stream.js";
import type { JobData } from "../dispatch/dispatcher.js";
import type { Engine } from "../engine.js";
import { type Claim, claimOf } from "../execution/claim.js";
import {
  type DeferredStart,
  type Delivery,
  insertTaking,
  mayDefer,
  type NewRun,
} from "../execution/deferred-start.js";
import type { JournalRows } from "../execution/journal-store.js";
import type { RunHost } from "../runner/run-host.js";
import { ExecutionAbortedError } from "../runtime/journal.js";
import { maxResultBytes } from "../runtime/result-size.js";
import { showRunningAfterDelay } from "../traces/running-span.js";
import { createSpanWriter } from "../traces/span-writer.js";
import { inJsonbOrder } from "../util/jsonb-order.js";

/** How long a held run is watched per round before its holder is checked again. */
const HELD_RECHECK_MS = 30_000;

/**
 * The in-cluster host of one run job: the worker reads and settles the run straight in Postgres
 * through the engine, publishes its live events and step spans in batches, and shows the run as
 * running in its trace once it has gone on for a moment. A new run's first delivery starts it with
 * its first step (execution/deferred-start.ts).
 */
export function createPostgresHost(
  engine: Engine,
  job: Extract<JobData, { kind: "run" }>,
  options: {
    workerId: () => string | null;
    logger: Logger;
    /** How the queue delivered the job: only a first delivery may defer its start. */
    delivery?: Delivery;
    /** Called once the run is this job's (its claim taken), before any settle. */
    onStarted?: (claim: Claim) => void;
    /** How long a deferred start waits for the first step's write (DeferredStart's default). */
    deferStartMs?: number;
    /**
     * The run as an API started it on this process, just inserted (in-cluster/direct-runs.ts): it
     * has no steps yet, and the job names its current dispatch.
     */
    started?: Execution;
    /** A new run an API sent to this process before inserting it: inserted with its first step. */
    newRun?: NewRun;
  },
): RunHost {
  let execution: Execution | undefined;
  let claim: Claim | undefined;
  let deferred: DeferredStart | undefined;
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
    deferred?.dispose();
    await Promise.all([stream?.flush(), spans?.flush(), runningSpan?.settle()]);
  };
  const began = (row: Execution) => {
    execution = row;
    claim = claimOf(row);
    runningSpan = showRunningAfterDelay(engine.traces, row, warn("span sync failed"));
    options.onStarted?.(claim);
  };
  /** The run as this job started it, a deferred start written first (ExecutionAbortedError: lost). */
  const held = async () => {
    if (deferred) await deferred.started();
    if (!execution || !claim) throw new Error("the run was not started");
    return { execution, claim };
  };
  /**
   * `settle` with the run held (its events and spans flushed first), or `lost` when a deferred start
   * found the run moved on.
   */
  const whenHeld = async <T>(
    settle: (run: { execution: Execution; claim: Claim }) => Promise<T>,
    lost: T,
  ): Promise<T> => {
    const run = await held()
      .catch((err) => {
        if (err instanceof ExecutionAbortedError) return null;
        throw err;
      })
      .finally(flush);
    return run ? settle(run) : lost;
  };
  const observe = (run: { projectId: string; workflowId: string; rootExecutionId: string | null }) => {
    const ids = { projectId: run.projectId, workflowId: run.workflowId, executionId: job.executionId };
    stream = createRunStream(engine.events, ids, warn("stream publish failed"));
    spans = createSpanWriter(
      engine.traces,
      { id: job.executionId, projectId: run.projectId, rootExecutionId: run.rootExecutionId },
      warn("span write failed"),
    );
  };

  /** The run is this job's, as started: what the runner replays it with. */
  const begin = (started: Execution) => {
    observe(started);
    began(started);
    return {
      input: started.input,
      execution: {
        id: started.id,
        workflowId: started.workflowId,
        attempt: started.attempt,
        queueName: started.queueName,
        parentExecutionId: started.parentExecutionId,
        rootExecutionId: started.rootExecutionId ?? started.id,
      },
    };
  };

  /**
   * A new root run (its own root, no steps yet) whose start is deferred to its first step's write:
   * what the runner replays it with, from what its job or message carried.
   */
  const deferRootRun = (
    run: Parameters<Engine["executions"]["deferStart"]>[0],
    carried: { projectId: string; workflowId: string; attempt: number; queueName: string; input: unknown },
  ) => {
    deferred = engine.executions.deferStart(run, began, options.deferStartMs);
    loaded = { steps: [], waits: [] };
    fresh = true;
    const id = run.executionId;
    observe({ projectId: carried.projectId, workflowId: carried.workflowId, rootExecutionId: id });
    return {
      input: carried.input,
      execution: {
        id,
        workflowId: carried.workflowId,
        attempt: carried.attempt,
        queueName: carried.queueName,
        parentExecutionId: null,
        rootExecutionId: id,
      },
    };
  };

  return {
    async start() {
      if (mayDefer(job.first, options.delivery)) {
        const { first } = job;
        return deferRootRun(
          {
            executionId: job.executionId,
            dispatchSeq: job.dispatchSeq,
            first,
            workerId: options.workerId(),
            takenAt: new Date(),
          },
          { ...first, projectId: job.projectId },
        );
      }
      if (options.newRun) {
        const run = options.newRun;
        const workerId = options.workerId();
        // Only a registered process is sent new runs; one re-registering gives them back (its caller).
        if (!workerId) throw new Error("this process has no worker row to start the run on");
        return deferRootRun(
          { executionId: run.id, taking: insertTaking(run, workerId, new Date()) },
          {
            projectId: run.projectId,
            workflowId: run.request.workflowId,
            attempt: 1,
            queueName: run.queueName,
            // As a replay will read it back from Postgres.
            input: inJsonbOrder(run.request.input ?? {}),
          },
        );
      }
      if (options.started) {
        // Started (and counted) by the API that sent it here.
        loaded = { steps: [], waits: [] };
        fresh = true;
        return begin(options.started);
      }
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
      loaded = result.journal;
      fresh = loaded !== undefined && loaded.steps.length === 0 && loaded.waits.length === 0;
      return begin(result.execution);
    },
    async journal() {
      // What the start read serves the first replay; a replay after a superseded step reads again.
      const rows = loaded;
      if (loaded === undefined) fresh = false;
      loaded = undefined;
      // A deferred start's journal takes the run with its first step's write (it routes every later
      // write under the claim taken).
      return engine.executions.journal(job.executionId, deferred?.saveStep ?? (await held()).claim, rows);
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
      let run: Awaited<ReturnType<typeof held>>;
      try {
        run = await held();
      } catch (err) {
        // The deferred start failed or found the run moved on: the held step is kept for whoever
        // runs it now (first write wins; this throws as the start did).
        if (deferred && lastStep) await deferred.saveStep(lastStep, maxResultBytes());
        throw err;
      }
      const { execution: started, claim } = run;
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
    fail(error, retry) {
      return whenHeld(async ({ claim }) => {
        const row = await engine.executions.fail({ executionId: job.executionId, claim, error, retry });
        return row === null ? "not_ours" : row.status === "queued" ? "retrying" : "failed";
      }, "not_ours" as const);
    },
    block(waits) {
      return whenHeld(
        async ({ claim }) =>
          (await engine.executions.block({ executionId: job.executionId, claim, waits })) !== null,
        false,
      );
    },
    notLoaded: () =>
      whenHeld(
        ({ execution, claim }) => engine.executions.notLoaded(execution, claim, options.workerId()),
        "not_ours" as const,
      ),
  };
}
