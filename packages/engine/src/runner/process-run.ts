import { serializeError, type WorkflowDefinition } from "@spool/shared";
import { ExecutionAbortedError, type ReplayOutcome, StepSupersededError } from "../runtime/journal.js";
import { replay } from "../runtime/replay.js";
import { isResultTooLarge } from "../runtime/result-size.js";
import { stepKeyOf } from "../runtime/step-errors.js";
import type { RunHost, RunnerLogger } from "./run-host.js";

/** What became of a job, for the worker's log and the queue's job record. */
export type RunResult =
  | "stale"
  | "completed"
  | "retrying"
  | "failed"
  | "waiting"
  | "handed_back"
  | "not_loaded"
  | `aborted: ${string}`;

/**
 * The job runner, the same for every kind of worker: start the run, load its journal, replay the
 * workflow, settle. Settling is one engine transition (complete, fail or retry, park); whether a
 * failed run retries, and when, is the engine's decision, from the outcome and the workflow's
 * retry budget. Where the run lives (Postgres, or the API over HTTP) is the host's business.
 */
export async function processRun(args: {
  host: RunHost;
  workflows: ReadonlyMap<string, WorkflowDefinition>;
  logger: RunnerLogger;
}): Promise<RunResult> {
  const { host } = args;
  const run = await host.start();
  if (!run) return "stale";
  const log = args.logger.child({ execution_id: run.execution.id, workflow_id: run.execution.workflowId });
  try {
    const definition = args.workflows.get(run.execution.workflowId);
    if (!definition) {
      const notLoaded = await host.notLoaded();
      if (notLoaded === "handed_back")
        log.warn({}, "workflow not loaded here; handed back for a worker that serves it");
      return notLoaded === "failed" ? "not_loaded" : notLoaded === "handed_back" ? "handed_back" : "stale";
    }
    const fail = async ({ error, retryable }: Extract<ReplayOutcome, { type: "failed" }>) => {
      const settled = await host.fail(error, { retryable, maxRetries: definition.options.retries ?? 0 });
      if (settled === "not_ours") return "stale";
      log.info({ error: error.message }, settled === "retrying" ? "attempt failed, retrying" : "failed");
      return settled;
    };
    // Live events and spans land before the outcome does (each settle verb sees to it).
    const settle = async (outcome: ReplayOutcome): Promise<RunResult | "superseded"> => {
      switch (outcome.type) {
        case "completed":
          try {
            await host.complete(outcome.result, outcome.lastStep);
          } catch (err) {
            if (err instanceof StepSupersededError) return "superseded";
            if (err instanceof ExecutionAbortedError) return settle({ type: "aborted", reason: err.message });
            // The host refused the result (or the held-back last step's) as too large: the run fails
            // with that, for good.
            if (!isResultTooLarge(err)) throw err;
            return fail({ type: "failed", error: serializeError(err, stepKeyOf(err)), retryable: false });
          }
          return "completed";
        case "failed":
          return fail(outcome);
        case "blocked":
          await host.block(outcome.waits);
          return "waiting";
        case "aborted":
          log.info({ reason: outcome.reason }, "stopped");
          return `aborted: ${outcome.reason}`;
        case "superseded":
          return "superseded";
      }
    };
    for (;;) {
      const outcome = await replay({
        definition,
        input: run.input,
        execution: run.execution,
        journal: await host.journal(),
        logger: {
          info: (m, f) => log.info(f ?? {}, m),
          warn: (m, f) => log.warn(f ?? {}, m),
          error: (m, f) => log.error(f ?? {}, m),
        },
        publish: (e) => host.publish(e),
        onStepFinished: (r) => host.recordStep(r),
        holdLastWrite: host.storesLastStep === true,
      });
      const result = await settle(outcome);
      // A step result held back lost to another worker's: the workflow went on with a value that is
      // not the stored one, so it runs again from its journal, which now holds the stored one.
      if (result !== "superseded") return result;
      log.warn({}, "a step's result was stored by another worker first; replaying from the journal");
    }
  } finally {
    // Nothing buffered outlives the job (a failed replay still leaves the events it published).
    await host.flush();
  }
}
