import type { Execution } from "@spool/db";
import {
  backoffDelay,
  type Claim,
  claimOf,
  createRunStream,
  createSpanWriter,
  type Engine,
  type JobData,
  replay,
} from "@spool/engine";
import type { Logger, WorkflowDefinition } from "@spool/shared";

/** How long a run must be going before its trace shows it running. */
const RUNNING_SPAN_DELAY_MS = 250;

/** Run-level retry backoff: 1 s, 2 s, 4 s … capped at 5 min (jittered). */
const RUN_RETRY_BACKOFF = { initial: 1000, max: 300_000, factor: 2 };

export interface InFlight {
  executionId: string;
  claim: Claim;
  /**
   * Ends the job now, after a drain handed the run back: BullMQ then completes it normally instead
   * of keeping it active (and counted against the queue's limit) until its lock expires. The replay
   * left behind is refused at its next step (the hand-back bumped the dispatch sequence); a step it
   * finishes meanwhile is kept and adopted by the next worker, not run again.
   */
  handBack: () => void;
}

/**
 * Processes one BullMQ job. Postgres decides what it means: a stale job is skipped; a current run
 * job replays the workflow and ends in one engine transition (complete, fail or retry, block).
 */
export async function executeJob(args: {
  engine: Engine;
  data: JobData;
  workflows: Map<string, WorkflowDefinition>;
  workerId: () => string | null;
  logger: Logger;
  inFlight: Map<string, InFlight>;
}): Promise<string> {
  const { engine, data } = args;
  if (data.kind === "timer") {
    return (await engine.executions.fireTimer(data.waitId)) ? "timer fired" : "timer not due";
  }
  const execution = await engine.executions.start(data.executionId, data.dispatchSeq, args.workerId());
  if (!execution) return "stale job skipped";

  let handBack = () => {};
  const handedBack = new Promise<string>((resolve) => {
    handBack = () => resolve("handed back");
  });
  args.inFlight.set(execution.id, { executionId: execution.id, claim: claimOf(execution), handBack });
  const runningSpan = showRunningAfterDelay(engine, execution.id, args.logger);
  try {
    return await Promise.race([runExecution(args, execution, runningSpan.settle), handedBack]);
  } finally {
    await runningSpan.settle();
    args.inFlight.delete(execution.id);
  }
}

/**
 * A run still going after a moment shows as running in its trace; short runs skip that write (it
 * cost a third of a no-op run's database work). Every transition that ends the worker's turn writes
 * the trace itself; `settle` makes sure this write is done or never starts before that.
 */
function showRunningAfterDelay(engine: Engine, executionId: string, logger: Logger) {
  let write: Promise<void> | undefined;
  const timer = setTimeout(() => {
    // Traces are observability: a failed span write is logged, never allowed to fail the run.
    write = engine.traces
      .sync(executionId)
      .catch((err) => logger.warn({ err: String(err), execution_id: executionId }, "span sync failed"));
  }, RUNNING_SPAN_DELAY_MS);
  return {
    settle: async () => {
      clearTimeout(timer);
      await write;
    },
  };
}

async function runExecution(
  args: Parameters<typeof executeJob>[0],
  execution: Execution,
  settleRunningSpan: () => Promise<void>,
): Promise<string> {
  const { engine, logger } = args;
  const claim = claimOf(execution);
  const definition = args.workflows.get(execution.workflowId);
  if (!definition) return notLoadedHere(args, execution, claim);

  const log = logger.child({ execution_id: execution.id, workflow_id: execution.workflowId });
  const warn = (what: string) => (err: unknown) => log.warn({ err: String(err) }, what);
  const stream = createRunStream(
    engine.events,
    { projectId: execution.projectId, workflowId: execution.workflowId, executionId: execution.id },
    warn("stream publish failed"),
  );
  const spans = createSpanWriter(engine.traces, execution, warn("span write failed"));
  const outcome = await replay({
    definition,
    input: execution.input,
    execution: {
      id: execution.id,
      workflowId: execution.workflowId,
      attempt: execution.attempt,
      queueName: execution.queueName,
      parentExecutionId: execution.parentExecutionId,
      rootExecutionId: execution.rootExecutionId ?? execution.id,
    },
    journal: await engine.executions.journal(execution.id, claim),
    logger: {
      info: (m, f) => log.info(f ?? {}, m),
      warn: (m, f) => log.warn(f ?? {}, m),
      error: (m, f) => log.error(f ?? {}, m),
    },
    canRetry: execution.attempt <= (definition.options.retries ?? 0),
    publish: stream.publish,
    onStepFinished: spans.record,
  });
  // Live events and spans land before the outcome does: a client that sees the run finished
  // finds its whole stream and trace.
  await Promise.all([stream.flush(), spans.flush(), settleRunningSpan()]);

  switch (outcome.type) {
    case "completed":
      await engine.executions.complete(execution.id, claim, outcome.result);
      return "completed";
    case "failed": {
      const retryDelayMs = outcome.retryable ? backoffDelay(execution.attempt, RUN_RETRY_BACKOFF) : null;
      await engine.executions.fail({
        executionId: execution.id,
        claim,
        error: outcome.error,
        retryDelayMs,
      });
      log.info(
        { error: outcome.error.message, retry_in_ms: retryDelayMs },
        outcome.retryable ? "attempt failed, retrying" : "failed",
      );
      return outcome.retryable ? "retrying" : "failed";
    }
    case "blocked":
      await engine.executions.block({ executionId: execution.id, claim, waits: outcome.waits });
      return "waiting";
    case "aborted":
      log.info({ reason: outcome.reason }, "stopped");
      return `aborted: ${outcome.reason}`;
  }
}

/** Another worker may serve a workflow this one lacks (say, a new one mid rolling deploy) for this long. */
const NOT_LOADED_RETRY_MS = 5000;

/**
 * A run of a workflow this worker does not have: handed back (after a pause) when another online
 * worker of the project serves it, failed with a clear error when none does.
 */
async function notLoadedHere(
  args: Parameters<typeof executeJob>[0],
  execution: Execution,
  claim: Claim,
): Promise<string> {
  const { engine } = args;
  if (await engine.workers.servedElsewhere(execution.projectId, execution.workflowId, args.workerId())) {
    await engine.executions.release(execution.id, claim, NOT_LOADED_RETRY_MS);
    args.logger.warn(
      { execution_id: execution.id, workflow_id: execution.workflowId },
      "workflow not loaded here; handed back for a worker that serves it",
    );
    return "handed back: workflow not loaded here";
  }
  await engine.executions.fail({
    executionId: execution.id,
    claim,
    error: {
      name: "WorkflowNotLoadedError",
      message: `workflow '${execution.workflowId}' is not loaded by any worker serving queue '${execution.queueName}' (deployment '${execution.deploymentId}')`,
      non_retryable: true,
    },
  });
  return "workflow not loaded";
}
