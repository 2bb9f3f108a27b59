import {
  isFirstStartClaim,
  MAX_RAN_STEPS,
  type PushRequest,
  runTopic,
  serializeError,
  type WireJournal,
  type WireStep,
} from "@spool/shared";
import { createBatcher } from "../agents/batcher.js";
import {
  ExecutionAbortedError,
  type Journal,
  type JournalStep,
  type JournalWait,
  type NewStepResult,
  type NewWait,
  type StepRecord,
  StepSupersededError,
  storedAsWritten,
} from "../runtime/journal.js";
import {
  formatBytes,
  StepResultTooLargeError,
  sizedJson,
  WorkflowResultTooLargeError,
} from "../runtime/result-size.js";
import { withStepKey } from "../runtime/step-errors.js";
import { type ProtocolClient, ProtocolError } from "./protocol-client.js";
import type { Reporter, ReportKind } from "./reporter.js";
import type { RunHost } from "./run-host.js";

/** How often live events and step spans are sent (one request per batch). */
const FLUSH_MS = 50;

const toJournalStep = (s: WireStep): JournalStep => ({
  stepKey: s.step_key,
  seq: s.seq,
  kind: s.kind,
  status: s.success ? "completed" : "failed",
  output: s.outputs ?? null,
  error: s.error,
  attempts: s.attempts,
});

const isRefusal = (err: unknown) => err instanceof ProtocolError && err.status === 409;
/**
 * Spool's 409 to a completion whose held-back last step lost to another worker's stored result: the
 * step's key, else undefined.
 */
const supersededStep = (err: unknown): string | undefined => {
  if (!isRefusal(err)) return undefined;
  const details = (err as ProtocolError).details as { reason?: unknown; step_key?: unknown } | undefined;
  return details?.reason === "step_superseded" ? String(details.step_key) : undefined;
};
const isTooLarge = (err: unknown): err is ProtocolError => err instanceof ProtocolError && err.status === 413;

/**
 * What Spool's 413 to a result means for the run: its own result limit (the message says it all), or
 * the API's body limit (SPOOL_MAX_BODY_BYTES), which a result near the limit can reach first.
 */
const refusedAs = (err: ProtocolError, name: string) =>
  (err.details as { error_name?: unknown } | undefined)?.error_name === name;

function refusalMessage(what: string, value: unknown, err: ProtocolError, ownError: string): string {
  if (refusedAs(err, ownError)) return err.message;
  let size = "a result";
  try {
    size = `${formatBytes(sizedJson(value).bytes)} of JSON`;
  } catch {
    // not JSON: the message does without its size
  }
  return `${what} returned ${size}; Spool refused it as too large (${err.status} ${err.errorType}: ${err.message})`;
}

/** A step result as `POST …/steps` (and `last_step` of `…/complete`) take it. */
const toWireWrite = (step: NewStepResult) => ({
  step_key: step.stepKey,
  outputs: step.output ?? null,
  success: step.status === "completed",
  error: step.error ?? null,
  seq: step.seq,
  kind: step.kind,
  attempts: step.attempts,
  started_at: step.startedAt.toISOString(),
});

/** A step this worker ran, as the worker routes take its span. */
const toStepSpan = (r: StepRecord) => ({
  step_key: r.stepKey,
  kind: r.kind,
  status: r.status,
  attempts: r.attempts,
  started_at: r.startedAt.toISOString(),
  ended_at: r.endedAt.toISOString(),
  input: r.input,
  output: r.output,
  error: r.error ?? null,
  attributes: r.attributes ?? null,
});

/**
 * The remote host of one pushed run: the worker reads and settles it through Spool's /internal
 * routes, every call fenced by the push's claim (X-Spool-Claim), so a worker whose run was
 * cancelled, timed out or given to another worker is refused (409) and stops. `cancelled()` says
 * Spool asked this worker to stop the run: no new step is stored from then on.
 */
export function createHttpHost(o: {
  api: ProtocolClient;
  push: PushRequest;
  workerId: () => string;
  cancelled: () => boolean;
  onError: (err: unknown, what: string) => void;
  /** The worker's reporter: step writes and completions go through it, batched with other runs'. */
  reporter: Reporter;
}): RunHost {
  const { push } = o;
  const run = `/internal/executions/${encodeURIComponent(push.execution_id)}`;
  const headers = () => ({ "x-worker-id": o.workerId(), "x-spool-claim": push.spool_claim });
  // A run's first start may have been pushed before its insert committed: a call that finds it
  // missing is made again (for as long as the client retries), unless Spool cancelled the run (it
  // does when the insert fails).
  const retry = isFirstStartClaim(push.spool_claim) ? { retryNotFound: () => !o.cancelled() } : {};
  const call = <T>(method: string, path: string, body?: unknown) =>
    o.api.request<T>(method, path, body, headers(), retry);
  /** A step write or the completion, through the worker's reporter. */
  const report = <T>(kind: ReportKind, body: unknown) =>
    o.reporter.report<T>(push.execution_id, push.spool_claim, kind, body, retry.retryNotFound);
  /** A settle call: false when Spool says the run is no longer this worker's. */
  const settle = async (verb: "complete" | "wait", body: unknown) => {
    if (o.cancelled()) return false;
    try {
      await (verb === "wait" ? call("POST", `${run}/wait`, body) : report(verb, body));
      return true;
    } catch (err) {
      const superseded = supersededStep(err);
      if (superseded !== undefined) throw new StepSupersededError(superseded);
      if (isRefusal(err)) return false;
      throw err;
    }
  };
  // The push's journal serves the first replay; a replay after a superseded step reads it again.
  let pushedJournal = push.spool_journal;
  const saveStep = async (step: NewStepResult): Promise<JournalStep> => {
    if (o.cancelled()) throw new ExecutionAbortedError("execution was cancelled");
    try {
      const { step: stored } = await report<{ step: WireStep }>("step", toWireWrite(step));
      return toJournalStep(stored);
    } catch (err) {
      if (isRefusal(err)) throw new ExecutionAbortedError((err as Error).message);
      // Nothing was stored: the replay fails the step with it, as an in-cluster worker's would.
      if (isTooLarge(err) && step.status === "completed") {
        throw new StepResultTooLargeError(
          refusalMessage(`step '${step.stepKey}'`, step.output, err, "StepResultTooLargeError"),
        );
      }
      throw err;
    }
  };
  /**
   * The held-back last step on its own (its completion was refused as too large): stored as the
   * replay would have, or as failed when it is the result refused (the run then fails with it).
   */
  const saveLastStep = async (step: NewStepResult): Promise<void> => {
    let stored: JournalStep;
    try {
      stored = await saveStep(step);
    } catch (err) {
      if (!(err instanceof StepResultTooLargeError)) throw err;
      await saveStep({ ...step, status: "failed", output: undefined, error: serializeError(err) });
      throw withStepKey(err, step.stepKey);
    }
    if (!storedAsWritten(stored, step)) throw new StepSupersededError(step.stepKey);
  };

  const stream = createBatcher<{ eventType: string; data: Record<string, unknown> }>(
    FLUSH_MS,
    (batch) =>
      call("POST", "/api/v1/events/publish", {
        topic: runTopic(push.workflow_id, push.execution_id),
        events: batch.map((e) => ({ event_type: e.eventType, data: e.data })),
      }),
    (err) => o.onError(err, "stream publish failed"),
  );
  // Steps whose spans Spool has stored: the completion names them (`ran_steps`), so that a run
  // whose every step ran in this push still ends in one statement when some spans went before it.
  const spansStored = new Set<string>();
  const spans = createBatcher<StepRecord>(
    FLUSH_MS * 2,
    async (records) => {
      await call("POST", `${run}/step-spans`, { steps: records.map(toStepSpan) });
      for (const r of records) spansStored.add(r.stepKey);
    },
    (err) => o.onError(err, "span write failed"),
  );
  const flush = async () => {
    await Promise.all([stream.flush(), spans.flush()]);
  };

  return {
    // Spool started the run before pushing it: the push is the start.
    start: async () => ({
      input: push.payload,
      execution: {
        id: push.execution_id,
        workflowId: push.workflow_id,
        attempt: push.attempt,
        queueName: push.queue_name,
        parentExecutionId: push.parent_execution_id,
        rootExecutionId: push.root_execution_id,
      },
    }),
    async journal(): Promise<Journal> {
      // The push carries it when Spool read it with the start: one request less per run.
      const j = pushedJournal ?? (await call<WireJournal>("GET", `${run}/steps`));
      pushedJournal = undefined;
      return {
        steps: new Map(j.steps.map((s) => [s.step_key, toJournalStep(s)])),
        waits: new Map(
          j.waits.map((w): [string, JournalWait] => [
            w.step_key,
            { stepKey: w.step_key, seq: w.seq, kind: w.kind, wakeAt: w.wake_at ? new Date(w.wake_at) : null },
          ]),
        ),
        saveStep,
        async eventCursor() {
          const { sequence } = await call<{ sequence: number }>("GET", `${run}/event-cursor`);
          return BigInt(sequence);
        },
        // Known when Spool sent it: results are then checked here, and the last step may be held back.
        maxResultBytes: push.spool_max_result_bytes,
      };
    },
    publish: (event) => {
      const written = stream.add({ eventType: event.eventType, data: event.data });
      if (event.now) void stream.flush();
      return written;
    },
    recordStep: (record) => void spans.add(record),
    flush,
    // A Spool that sends the result limit takes `last_step` with the completion.
    storesLastStep: push.spool_max_result_bytes !== undefined,
    async complete(result, lastStep) {
      // The spans still buffered go with the completion: one call, and Spool writes them with it.
      await stream.flush();
      const { items, written } = await spans.take();
      const tooLarge = (err: ProtocolError) =>
        new WorkflowResultTooLargeError(
          refusalMessage(`workflow '${push.workflow_id}'`, result, err, "WorkflowResultTooLargeError"),
        );
      const ranSteps =
        spansStored.size > 0 && spansStored.size <= MAX_RAN_STEPS ? [...spansStored] : undefined;
      try {
        return await settle("complete", {
          result,
          worker_id: o.workerId(),
          ...(items.length > 0 ? { step_spans: items.map(toStepSpan) } : {}),
          ...(ranSteps ? { ran_steps: ranSteps } : {}),
          ...(lastStep ? { last_step: toWireWrite(lastStep) } : {}),
        });
      } catch (err) {
        // Refused as too large (processRun then fails the run); the spans and the held-back last
        // step still go, on their own. If the body limit refused it, they (or `ran_steps`) may be
        // what made it too large: the result goes again without them.
        if (!isTooLarge(err)) throw err;
        if (items.length > 0) {
          await call("POST", `${run}/step-spans`, { steps: items.map(toStepSpan) }).catch((e) =>
            o.onError(e, "span write failed"),
          );
        }
        if (lastStep) await saveLastStep(lastStep);
        const sentExtras = items.length > 0 || lastStep !== undefined || ranSteps !== undefined;
        if (!sentExtras || refusedAs(err, "WorkflowResultTooLargeError")) {
          throw tooLarge(err);
        }
        try {
          return await settle("complete", { result, worker_id: o.workerId() });
        } catch (again) {
          throw isTooLarge(again) ? tooLarge(again) : again;
        }
      } finally {
        written();
      }
    },
    async fail(error, retry) {
      await flush();
      if (o.cancelled()) return "not_ours";
      try {
        const { status } = await call<{ status: string }>("POST", `${run}/fail`, {
          error,
          worker_id: o.workerId(),
          retryable: retry.retryable,
          max_retries: retry.maxRetries,
        });
        return status === "queued" ? "retrying" : "failed";
      } catch (err) {
        if (isRefusal(err)) return "not_ours";
        throw err;
      }
    },
    block: async (waits: NewWait[]) => {
      await flush();
      return settle("wait", {
        waits: waits.map((w) => ({
          step_key: w.stepKey,
          seq: w.seq,
          kind: w.kind,
          wake_at: w.wakeAt?.toISOString() ?? null,
          topic: w.topic ?? null,
          match: w.match ?? null,
          after_sequence: w.afterSequence === undefined ? null : Number(w.afterSequence),
          payload: w.payload,
          child: w.child
            ? { workflow_id: w.child.workflowId, input: w.child.input, queue_name: w.child.queueName ?? null }
            : null,
        })),
      });
    },
    async notLoaded() {
      try {
        const { outcome } = await call<{ outcome: "handed_back" | "failed" }>("POST", `${run}/not-loaded`);
        return outcome;
      } catch (err) {
        if (isRefusal(err)) return "not_ours";
        throw err;
      }
    },
  };
}
