// The worker protocol (spec/worker-protocol.md): what a remote worker sends to /internal/* and
// what it reads back. The Polos SDKs speak its core fields; Spool's own SDK sends a few more
// (marked "Spool"), never fewer.
import { z } from "@hono/zod-openapi";
import { ClientId } from "../ids.js";
import { MAX_RAN_STEPS, MAX_REPORTS } from "../protocol/push.js";
import { JsonObject, JsonValue, MAX_INT4, Text, Timestamp } from "./common.js";
import { ExecutionError } from "./executions.js";

export const InternalExecutionParams = z.object({
  execution_id: z.string().openapi({ param: { name: "execution_id", in: "path" } }),
});
export const InternalStepParams = InternalExecutionParams.extend({
  step_key: Text.min(1)
    .max(500)
    .openapi({ param: { name: "step_key", in: "path" } }),
});
export const SessionParams = z.object({
  session_id: Text.min(1)
    .max(500)
    .openapi({ param: { name: "session_id", in: "path" } }),
});

/** Who calls: the push worker's id (X-Worker-ID), and Spool's SDK also echoes the push's claim. */
export const WorkerCallHeaders = z.object({
  "X-Worker-ID": z
    .string()
    .optional()
    .openapi({
      param: { in: "header" },
      description:
        "The worker the run was pushed to (a re-registered worker at the same push URL also counts)",
    }),
  "X-Spool-Claim": z
    .string()
    .optional()
    .openapi({
      param: { in: "header" },
      description: "Spool: the push's `spool_claim`, which fences the call to exactly that start of the run",
    }),
});

/** A step as a remote worker reads it back. */
export const RemoteStep = z
  .object({
    step_key: z.string(),
    outputs: JsonValue,
    success: z.boolean(),
    error: ExecutionError.nullable(),
    completed_at: Timestamp.nullable(),
    // Spool
    seq: z.number().int(),
    kind: z.string(),
    attempts: z.number().int(),
  })
  .openapi("RemoteStep");

export const RemoteStepsResponse = z
  .object({
    steps: z.array(RemoteStep),
    // Spool: the waits the run is still parked on (a replay keeps their seq and deadline).
    waits: z.array(
      z.object({
        step_key: z.string(),
        seq: z.number().int(),
        kind: z.string(),
        wake_at: Timestamp.nullable(),
      }),
    ),
  })
  .openapi("RemoteStepsResponse");

const StepErrorInput = z.union([
  Text.max(100_000),
  z.object({
    message: Text.max(100_000),
    name: Text.max(500).optional(),
    step_key: Text.max(500).optional(),
    stack: Text.max(100_000).optional(),
    non_retryable: z.boolean().optional(),
  }),
]);

export const SaveStepBody = z
  .object({
    step_key: Text.min(1).max(500),
    outputs: JsonValue.optional().openapi({ description: "The step's result; absent means null" }),
    success: z.boolean().default(true),
    error: StepErrorInput.nullish(),
    // Spool
    seq: z.number().int().min(1).max(MAX_INT4).optional(),
    kind: z.enum(["run", "now", "uuid", "llm", "tool", "sleep"]).optional(),
    attempts: z.number().int().min(1).max(MAX_INT4).optional(),
    started_at: Timestamp.optional(),
  })
  .openapi("SaveStepBody");
export const SaveStepResponse = z.object({ step: RemoteStep }).openapi("SaveStepResponse");

/** Spool: every wait a replay parked on, as the engine stores them. */
export const ParkedWait = z
  .object({
    step_key: Text.min(1).max(500),
    seq: z.number().int().min(1).max(MAX_INT4),
    kind: z.enum(["sleep", "event", "suspend", "invoke"]),
    wake_at: Timestamp.nullish(),
    topic: Text.min(1).max(500).nullish(),
    match: JsonObject.nullish(),
    after_sequence: z.number().int().min(0).nullish(),
    payload: JsonValue.optional(),
    child: z.object({ workflow_id: ClientId, input: JsonValue, queue_name: ClientId.nullish() }).nullish(),
  })
  .superRefine((w, ctx) => {
    // A wait nothing could ever settle would park the run for good.
    const needs = { sleep: ["wake_at"], event: ["topic"], invoke: ["child"], suspend: [] }[w.kind];
    for (const field of needs) {
      if (w[field as keyof typeof w] === null || w[field as keyof typeof w] === undefined) {
        ctx.addIssue({ code: "custom", message: `a ${w.kind} wait needs ${field}`, path: [field] });
      }
    }
  });

export const WaitBody = z
  .object({
    step_key: Text.min(1).max(500).optional(),
    wait_type: z.enum(["time", "event", "suspend"]).optional(),
    wait_until: Timestamp.nullish(),
    wait_topic: Text.min(1).max(500).nullish(),
    expires_at: Timestamp.nullish(),
    // Spool: all the waits at once (parallel branches park together).
    waits: z.array(ParkedWait).min(1).max(1000).optional(),
  })
  .superRefine((b, ctx) => {
    if (b.waits) return;
    if (!b.step_key || !b.wait_type) {
      ctx.addIssue({ code: "custom", message: "step_key and wait_type are required", path: ["wait_type"] });
    } else if (b.wait_type === "time" && !b.wait_until) {
      ctx.addIssue({ code: "custom", message: "a time wait needs wait_until", path: ["wait_until"] });
    } else if (b.wait_type !== "time" && !b.wait_topic) {
      ctx.addIssue({
        code: "custom",
        message: `a ${b.wait_type} wait needs wait_topic`,
        path: ["wait_topic"],
      });
    }
  })
  .openapi("WaitBody");

/** Spool: a step a remote worker ran, for the run's trace (recorded exactly as an in-cluster worker's). */
export const StepSpanInput = z
  .object({
    step_key: Text.min(1).max(500),
    kind: z.enum(["run", "sleep", "event", "suspend", "invoke", "now", "uuid", "llm", "tool"]),
    status: z.enum(["completed", "failed"]),
    attempts: z.number().int().min(1).max(MAX_INT4),
    started_at: Timestamp,
    ended_at: Timestamp,
    input: JsonValue.optional(),
    output: JsonValue.optional(),
    error: ExecutionError.nullish(),
    attributes: JsonObject.nullish(),
  })
  .openapi("StepSpanInput");

/** The worker the protocol's settle calls name (a uuid for a registered worker; anything else is no worker). */
const CallerWorkerId = Text.max(100).nullish();

export const CompleteBody = z
  .object({
    result: JsonValue.optional(),
    worker_id: CallerWorkerId,
    final_state: JsonValue.optional(),
    // Spool: the spans of the steps still unreported, written with the completion (no extra call).
    step_spans: z.array(StepSpanInput).max(1000).optional(),
    // Spool: the keys of the steps this push ran whose spans were stored before (…/step-spans): with
    // step_spans they let a run whose every step ran in this push end in one statement.
    ran_steps: z.array(Text.min(1).max(500)).max(MAX_RAN_STEPS).optional(),
    // Spool: the run's last step result, not stored yet: stored first (first write wins), then the run
    // completes, in one round trip. 409 with details.reason "step_superseded" when another worker's
    // result for that step was stored first: the worker replays the run from its journal.
    last_step: SaveStepBody.extend({ success: z.literal(true).default(true) }).optional(),
  })
  .openapi("CompleteExecutionBody");

export const FailBody = z
  .object({
    error: StepErrorInput,
    worker_id: CallerWorkerId,
    stack: Text.max(100_000).nullish(),
    retryable: z.boolean().default(false),
    final_state: JsonValue.optional(),
    // Spool: the workflow's own run-level retry budget (the protocol's default is 2).
    max_retries: z.number().int().min(0).max(1000).optional(),
  })
  .openapi("FailExecutionBody");

export const WorkerIdBody = z.object({ worker_id: CallerWorkerId }).openapi("WorkerIdBody");

export const OtelSpanIdBody = z.object({ otel_span_id: Text.max(200).nullish() }).openapi("OtelSpanIdBody");

export const EventCursorResponse = z.object({ sequence: z.number().int() }).openapi("EventCursorResponse");

export const NotLoadedResponse = z
  .object({ outcome: z.enum(["handed_back", "failed"]) })
  .openapi("NotLoadedResponse");

/**
 * Spool: one report of a batch: a step write (`step`, as `POST …/steps` takes it) or a completion
 * (`complete`, as `POST …/complete` takes it) of one run, under its push's claim (X-Spool-Claim).
 */
export const RunReport = z
  .object({
    execution_id: Text.max(100),
    claim: Text.max(100).nullish(),
    step: SaveStepBody.optional(),
    complete: CompleteBody.optional(),
  })
  .refine((r) => (r.step === undefined) !== (r.complete === undefined), {
    message: "a report carries exactly one of step and complete",
  })
  .openapi("RunReport");

export const ReportsBody = z
  .object({ reports: z.array(RunReport).min(1).max(MAX_REPORTS) })
  .openapi("ReportsBody");

/** Each report's answer: what its own route would have answered (status, and body or error body). */
export const ReportOutcome = z
  .object({
    status: z.number().int(),
    body: z.unknown().optional(),
    error: z.string().optional(),
    error_type: z.string().optional(),
    details: z.unknown().optional(),
  })
  .openapi("ReportOutcome");

export const ReportsResponse = z.object({ results: z.array(ReportOutcome) }).openapi("ReportsResponse");

/** Spool: spans of steps a remote worker ran. */
export const StepSpansBody = z
  .object({ steps: z.array(StepSpanInput).min(1).max(1000) })
  .openapi("StepSpansBody");

export const SessionMemoryBody = z
  .object({
    summary: Text.max(1_000_000).nullish(),
    messages: z
      .array(z.object({ role: Text.min(1).max(100), content: JsonValue }))
      .max(10_000)
      .default([]),
  })
  .openapi("SessionMemory");
export const SessionMemoryResponse = z
  .object({
    summary: z.string().nullable(),
    messages: z.array(z.object({ role: z.string(), content: JsonValue })),
  })
  .openapi("SessionMemoryResponse");

export const AcceptedResponse = z.object({ accepted: z.literal(true) }).openapi("AcceptedResponse");
export const FailResponse = z
  .object({
    accepted: z.literal(true),
    status: z.enum(["queued", "failed"]).openapi({ description: "queued: the run is retried (attempt + 1)" }),
  })
  .openapi("FailExecutionResponse");
