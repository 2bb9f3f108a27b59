// The worker protocol's execution calls (spec/worker-protocol.md §3): what a remote worker reports
// for a run Spool pushed to it. Each handler calls one engine verb under the caller's claim.
import { createRoute, type z } from "@hono/zod-openapi";
import type { NewWait, RemoteCaller, StepRecord, StepWrite } from "@spool/engine";
import {
  AcceptedResponse,
  CompleteBody,
  EventCursorResponse,
  FailBody,
  FailResponse,
  InternalExecutionParams,
  InternalStepParams,
  NotLoadedResponse,
  OtelSpanIdBody,
  parseSpoolClaim,
  RemoteStep,
  RemoteStepsResponse,
  ReportsBody,
  ReportsResponse,
  SaveStepBody,
  SaveStepResponse,
  type SerializedError,
  type StepSpanInput,
  StepSpansBody,
  WaitBody,
  WorkerCallHeaders,
  WorkerIdBody,
} from "@spool/shared";
import type { Context } from "hono";
import type { ApiEnv, App } from "../context.js";
import { answerFor, errorResponses, unavailable } from "../errors.js";
import { AUTHENTICATED, json, jsonBody, ProjectHeaders } from "../openapi.js";
import { presentRemoteStep } from "../presenters.js";

const base = { security: AUTHENTICATED, tags: ["Worker protocol"] };
const Headers = ProjectHeaders.extend(WorkerCallHeaders.shape);
const ERRORS = errorResponses(400, 401, 403, 404, 409, 413, 415);
const path = (rest: string) => `/internal/executions/{execution_id}${rest}`;
const optionalBody = <T extends z.ZodType>(schema: T) => ({
  required: false,
  content: { "application/json": { schema } },
});

const listSteps = createRoute({
  ...base,
  method: "get",
  path: path("/steps"),
  summary: "The run's stored steps (settled waits included) and open waits, for a replay",
  request: { headers: Headers, params: InternalExecutionParams },
  responses: { 200: json(RemoteStepsResponse, "The journal"), ...ERRORS },
});
const getStep = createRoute({
  ...base,
  method: "get",
  path: path("/steps/{step_key}"),
  summary: "One stored step; 404 when it has no result yet",
  request: { headers: Headers, params: InternalStepParams },
  responses: { 200: json(RemoteStep, "The step"), ...ERRORS },
});
const saveStep = createRoute({
  ...base,
  method: "post",
  path: path("/steps"),
  summary: "Store a step's result (a completed one is never overwritten); answers the stored step",
  description:
    "A result of more than SPOOL_MAX_STEP_RESULT_BYTES of JSON (default 1 MiB) is refused with 413 " +
    "PAYLOAD_TOO_LARGE and nothing is stored; the worker should fail the step (it cannot get smaller by retrying).",
  request: { headers: Headers, params: InternalExecutionParams, body: jsonBody(SaveStepBody) },
  responses: { 200: json(SaveStepResponse, "Stored"), ...ERRORS },
});
const park = createRoute({
  ...base,
  method: "post",
  path: path("/wait"),
  summary: "Park the run on a time, event or suspend wait (Spool's SDK: on all its waits)",
  request: { headers: Headers, params: InternalExecutionParams, body: jsonBody(WaitBody) },
  responses: { 200: json(AcceptedResponse, "Parked"), ...ERRORS },
});
const complete = createRoute({
  ...base,
  method: "post",
  path: path("/complete"),
  summary: "The run finished with `result`",
  description:
    "A result of more than SPOOL_MAX_STEP_RESULT_BYTES of JSON (default 1 MiB) is refused with 413 " +
    "PAYLOAD_TOO_LARGE and the run stays running; the worker should fail it.",
  request: { headers: Headers, params: InternalExecutionParams, body: optionalBody(CompleteBody) },
  responses: { 200: json(AcceptedResponse, "Completed"), ...ERRORS },
});
const fail = createRoute({
  ...base,
  method: "post",
  path: path("/fail"),
  summary: "The attempt failed; a retryable failure is retried while the run has attempts left",
  request: { headers: Headers, params: InternalExecutionParams, body: jsonBody(FailBody) },
  responses: { 200: json(FailResponse, "Failed, or queued for another attempt"), ...ERRORS },
});
const confirmCancellation = createRoute({
  ...base,
  method: "post",
  path: path("/confirm-cancellation"),
  summary: "The worker stopped the run: acknowledges a cancel, or hands back a run nobody cancelled",
  request: { headers: Headers, params: InternalExecutionParams, body: optionalBody(WorkerIdBody) },
  responses: { 200: json(AcceptedResponse, "Acknowledged"), ...ERRORS },
});
const otelSpanId = createRoute({
  ...base,
  method: "put",
  path: path("/otel-span-id"),
  summary: "The span the worker last recorded for the run; the next push carries it",
  request: { headers: Headers, params: InternalExecutionParams, body: jsonBody(OtelSpanIdBody) },
  responses: { 200: json(AcceptedResponse, "Stored"), ...ERRORS },
});
const eventCursor = createRoute({
  ...base,
  method: "get",
  path: path("/event-cursor"),
  summary: "Spool: where the project's events stand (a new event wait is answered by later events)",
  request: { headers: Headers, params: InternalExecutionParams },
  responses: { 200: json(EventCursorResponse, "The project's event sequence"), ...ERRORS },
});
const notLoaded = createRoute({
  ...base,
  method: "post",
  path: path("/not-loaded"),
  summary: "Spool: the worker lacks the run's workflow (handed back, or failed when nobody serves it)",
  request: { headers: Headers, params: InternalExecutionParams },
  responses: { 200: json(NotLoadedResponse, "What became of the run"), ...ERRORS },
});
const reports = createRoute({
  ...base,
  method: "post",
  path: "/internal/reports",
  summary: "Spool: step writes and completions of several runs in one request",
  description:
    "Each report is what `POST …/steps` (`step`) or `POST …/complete` (`complete`) would take for its " +
    "run, under the claim it names (the push's `spool_claim`; X-Worker-ID names the worker for all). " +
    "They are handled independently: `results` holds, in order, the status and body (or error body) " +
    "each one's own route would have answered. Spool's SDK sends a remote worker's reports this way " +
    "while an earlier one is on its way, so a busy worker costs Spool fewer requests.",
  request: {
    headers: ProjectHeaders.extend(WorkerCallHeaders.pick({ "X-Worker-ID": true }).shape),
    body: jsonBody(ReportsBody),
  },
  responses: { 200: json(ReportsResponse, "Each report's outcome, in order"), ...ERRORS },
});
const stepSpans = createRoute({
  ...base,
  method: "post",
  path: path("/step-spans"),
  summary: "Spool: trace spans of steps the worker ran (LLM and tool details included)",
  request: { headers: Headers, params: InternalExecutionParams, body: jsonBody(StepSpansBody) },
  responses: { 200: json(AcceptedResponse, "Recorded"), ...ERRORS },
});

/**
 * The caller: X-Spool-Claim (Spool's SDK; a batched report names its own) or the worker it names
 * (header or body).
 */
function callerOf(c: Context<ApiEnv>, bodyWorkerId?: string | null, claim?: string | null): RemoteCaller {
  return {
    workerId: c.req.header("x-worker-id") ?? bodyWorkerId ?? null,
    claim: parseSpoolClaim(claim === undefined ? c.req.header("x-spool-claim") : claim),
  };
}

/** A step or run error as the engine stores it: the protocol sends a message, Spool's SDK the whole error. */
function toError(e: z.infer<typeof SaveStepBody>["error"], stack?: string | null): SerializedError | null {
  if (e === null || e === undefined) return null;
  if (typeof e === "string") return { name: "Error", message: e, ...(stack ? { stack } : {}) };
  return { ...e, name: e.name ?? "Error", ...(stack && !e.stack ? { stack } : {}) };
}

function toNewWait(w: NonNullable<z.infer<typeof WaitBody>["waits"]>[number]): NewWait {
  return {
    stepKey: w.step_key,
    seq: w.seq,
    kind: w.kind,
    wakeAt: w.wake_at ? new Date(w.wake_at) : null,
    ...(w.topic ? { topic: w.topic } : {}),
    ...(w.match ? { match: w.match } : {}),
    ...(w.after_sequence !== null && w.after_sequence !== undefined
      ? { afterSequence: BigInt(w.after_sequence) }
      : {}),
    ...(w.payload !== undefined ? { payload: w.payload } : {}),
    ...(w.child
      ? {
          child: {
            workflowId: w.child.workflow_id,
            input: w.child.input,
            queueName: w.child.queue_name ?? undefined,
          },
        }
      : {}),
  };
}

const OK = { accepted: true } as const;

/** A step result as the worker routes take it (`POST …/steps`, `last_step` of `…/complete`). */
const toStepWrite = (b: z.infer<typeof SaveStepBody>): StepWrite => ({
  stepKey: b.step_key,
  output: b.outputs ?? null,
  status: b.success ? "completed" : "failed",
  error: toError(b.error),
  seq: b.seq,
  kind: b.kind,
  attempts: b.attempts,
  startedAt: b.started_at ? new Date(b.started_at) : undefined,
});

/** A step span as a remote worker reports it, as the engine records it. */
const toStepRecord = (s: z.infer<typeof StepSpanInput>): StepRecord => ({
  stepKey: s.step_key,
  kind: s.kind,
  status: s.status,
  attempts: s.attempts,
  startedAt: new Date(s.started_at),
  endedAt: new Date(s.ended_at),
  input: s.input,
  output: s.output,
  error: s.error ?? undefined,
  attributes: s.attributes ?? undefined,
});

/** `POST …/steps`: stores the step, answers the stored one. */
async function saveStepAs(
  c: Context<ApiEnv>,
  executionId: string,
  caller: RemoteCaller,
  b: z.infer<typeof SaveStepBody>,
) {
  const stored = await c
    .get("engine")
    .remote.saveStep(c.get("projectId"), executionId, caller, toStepWrite(b));
  return { step: presentRemoteStep({ ...stored, completedAt: new Date() }) };
}

/** `POST …/complete`: completes the run (its last step and spans with it). */
async function completeAs(
  c: Context<ApiEnv>,
  executionId: string,
  caller: RemoteCaller,
  b: z.infer<typeof CompleteBody>,
) {
  await c
    .get("engine")
    .remote.complete(
      c.get("projectId"),
      executionId,
      caller,
      b.result ?? null,
      (b.step_spans ?? []).map(toStepRecord),
      b.last_step ? toStepWrite(b.last_step) : undefined,
      b.ran_steps,
    );
  return OK;
}

/**
 * One batched report's outcome, as its own route would have answered it (answerFor, as onError
 * maps errors; a client that left reads nothing, so any answer does).
 */
async function outcomeOf(c: Context<ApiEnv>, report: () => Promise<unknown>) {
  try {
    return { status: 200, body: await report() };
  } catch (err) {
    const error = answerFor(err, c) ?? unavailable();
    return { status: error.status, ...error.toBody() };
  }
}

export function registerInternalExecutions(app: App) {
  app.openapi(listSteps, async (c) => {
    const { execution_id } = c.req.valid("param");
    const j = await c.get("engine").remote.journal(c.get("projectId"), execution_id, callerOf(c));
    const waits = j.waits.map((w) => ({
      step_key: w.stepKey,
      seq: w.seq,
      kind: w.kind,
      wake_at: w.wakeAt?.toISOString() ?? null,
    }));
    return c.json({ steps: j.steps.map(presentRemoteStep), waits }, 200);
  });

  app.openapi(getStep, async (c) => {
    const { execution_id, step_key } = c.req.valid("param");
    const step = await c.get("engine").remote.step(c.get("projectId"), execution_id, callerOf(c), step_key);
    return c.json(presentRemoteStep(step), 200);
  });

  app.openapi(saveStep, async (c) =>
    c.json(await saveStepAs(c, c.req.valid("param").execution_id, callerOf(c), c.req.valid("json")), 200),
  );

  app.openapi(park, async (c) => {
    const b = c.req.valid("json");
    const wait = b.waits
      ? b.waits.map(toNewWait)
      : {
          stepKey: b.step_key!,
          waitType: b.wait_type!,
          waitUntil: b.wait_until ? new Date(b.wait_until) : null,
          waitTopic: b.wait_topic ?? null,
          expiresAt: b.expires_at ? new Date(b.expires_at) : null,
        };
    await c
      .get("engine")
      .remote.park(c.get("projectId"), c.req.valid("param").execution_id, callerOf(c), wait);
    return c.json(OK, 200);
  });

  app.openapi(complete, async (c) => {
    const b = c.req.valid("json") ?? {};
    return c.json(await completeAs(c, c.req.valid("param").execution_id, callerOf(c, b.worker_id), b), 200);
  });

  // Independent reports, handled at once: their statements share the engine's group commits.
  app.openapi(reports, async (c) => {
    const results = await Promise.all(
      c.req
        .valid("json")
        .reports.map((r) =>
          outcomeOf(c, () =>
            r.step
              ? saveStepAs(c, r.execution_id, callerOf(c, null, r.claim ?? null), r.step)
              : completeAs(
                  c,
                  r.execution_id,
                  callerOf(c, r.complete?.worker_id, r.claim ?? null),
                  r.complete ?? {},
                ),
          ),
        ),
    );
    return c.json({ results }, 200);
  });

  app.openapi(fail, async (c) => {
    const b = c.req.valid("json");
    const row = await c
      .get("engine")
      .remote.fail(c.get("projectId"), c.req.valid("param").execution_id, callerOf(c, b.worker_id), {
        error: toError(b.error, b.stack)!,
        retryable: b.retryable,
        // The protocol's run-level retry budget, unless the worker says its workflow's own.
        maxRetries: b.max_retries ?? 2,
      });
    return c.json({ accepted: true, status: row.status === "queued" ? "queued" : "failed" } as const, 200);
  });

  app.openapi(confirmCancellation, async (c) => {
    const b = c.req.valid("json") ?? {};
    const id = c.req.valid("param").execution_id;
    await c.get("engine").remote.confirmCancellation(c.get("projectId"), id, callerOf(c, b.worker_id));
    return c.json(OK, 200);
  });

  app.openapi(otelSpanId, async (c) => {
    const id = c.req.valid("param").execution_id;
    await c
      .get("engine")
      .remote.setOtelSpanId(c.get("projectId"), id, c.req.valid("json").otel_span_id ?? null);
    return c.json(OK, 200);
  });

  app.openapi(eventCursor, async (c) => {
    const id = c.req.valid("param").execution_id;
    const sequence = await c.get("engine").remote.eventCursor(c.get("projectId"), id, callerOf(c));
    return c.json({ sequence: Number(sequence) }, 200);
  });

  app.openapi(notLoaded, async (c) => {
    const id = c.req.valid("param").execution_id;
    const outcome = await c.get("engine").remote.notLoaded(c.get("projectId"), id, callerOf(c));
    return c.json({ outcome }, 200);
  });

  app.openapi(stepSpans, async (c) => {
    await c
      .get("engine")
      .remote.recordStepSpans(
        c.get("projectId"),
        c.req.valid("param").execution_id,
        callerOf(c),
        c.req.valid("json").steps.map(toStepRecord),
      );
    return c.json(OK, 200);
  });
}
