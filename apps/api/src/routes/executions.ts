import { createRoute, type z } from "@hono/zod-openapi";
import type { RunRequest } from "@spool/engine";
import {
  BatchRunBody,
  BatchRunResponse,
  CancelExecutionResponse,
  DetailPageQuery,
  ExecutionParams,
  ExecutionResponse,
  IdempotencyHeaders,
  isWaitOver,
  ListExecutionsQuery,
  ListExecutionsResponse,
  ListStepsResponse,
  PageQuery,
  ResumeExecutionBody,
  ResumeExecutionResponse,
  RunAndWaitResponse,
  RunWorkflowBody,
  RunWorkflowResponse,
  SpoolError,
  WaitQuery,
  WorkflowParams,
} from "@spool/shared";
import type { Context } from "hono";
import type { ApiEnv, App } from "../context.js";
import { errorResponses } from "../errors.js";
import { AUTHENTICATED, json, jsonBody, ProjectHeaders } from "../openapi.js";
import { presentExecution, presentStep } from "../presenters.js";

const base = { security: AUTHENTICATED, tags: ["Executions"] };
const Headers = ProjectHeaders.extend(IdempotencyHeaders.shape);

const runWorkflow = createRoute({
  ...base,
  method: "post",
  path: "/api/v1/workflows/{workflow_id}/run",
  summary: "Start a run of a workflow (or agent); Idempotency-Key makes a retry safe",
  description:
    "With `?wait=<seconds>` the response waits for the run to finish (or, with `until=blocked`, to finish " +
    "or park on a wait or for input): 200 with the execution when it did, 202 with its current state when " +
    "the wait ran out.",
  request: { headers: Headers, params: WorkflowParams, query: WaitQuery, body: jsonBody(RunWorkflowBody) },
  responses: {
    200: json(RunAndWaitResponse, "Finished (or blocked, with until=blocked) within the wait"),
    202: json(RunWorkflowResponse.or(RunAndWaitResponse), "Queued (or still running after the wait)"),
    ...errorResponses(400, 401, 403, 404, 409, 413, 415),
  },
});
const batchRun = createRoute({
  ...base,
  method: "post",
  path: "/api/v1/workflows/batch_run",
  summary: "Start several runs, all or nothing",
  request: { headers: Headers, body: jsonBody(BatchRunBody) },
  responses: {
    202: json(BatchRunResponse, "Queued, in request order"),
    ...errorResponses(400, 401, 403, 404, 409, 413, 415),
  },
});
const listExecutions = createRoute({
  ...base,
  method: "get",
  path: "/api/v1/executions",
  summary: "List executions, newest first",
  request: { headers: ProjectHeaders, query: ListExecutionsQuery.extend(PageQuery.shape) },
  responses: { 200: json(ListExecutionsResponse, "Executions"), ...errorResponses(400, 401, 403, 404) },
});
const getExecution = createRoute({
  ...base,
  method: "get",
  path: "/api/v1/executions/{execution_id}",
  summary: "Get an execution; `?wait=<seconds>` waits for it to finish (`until=blocked`: or to park)",
  request: { headers: ProjectHeaders, params: ExecutionParams, query: WaitQuery },
  responses: {
    200: json(ExecutionResponse, "The execution (the wait is over, or none was asked)"),
    202: json(ExecutionResponse, "Not there yet when the wait ran out"),
    ...errorResponses(400, 401, 403, 404),
  },
});
const listSteps = createRoute({
  ...base,
  method: "get",
  path: "/api/v1/executions/{execution_id}/steps",
  summary: "An execution's steps in the order it reached them, a page at a time",
  request: { headers: ProjectHeaders, params: ExecutionParams, query: DetailPageQuery },
  responses: { 200: json(ListStepsResponse, "Steps"), ...errorResponses(400, 401, 403, 404) },
});
const resumeExecution = createRoute({
  ...base,
  method: "post",
  path: "/api/v1/executions/{execution_id}/resume",
  summary: "Resume a suspended execution; its suspended step returns `data`",
  request: { headers: ProjectHeaders, params: ExecutionParams, body: jsonBody(ResumeExecutionBody) },
  responses: {
    202: json(ResumeExecutionResponse, "Queued again"),
    ...errorResponses(400, 401, 403, 404, 409, 413, 415),
  },
});
const cancelExecution = createRoute({
  ...base,
  method: "post",
  path: "/api/v1/executions/{execution_id}/cancel",
  summary: "Cancel an execution and its unfinished child executions",
  request: { headers: ProjectHeaders, params: ExecutionParams },
  responses: { 200: json(CancelExecutionResponse, "Cancelled"), ...errorResponses(400, 401, 403, 404, 409) },
});

type RunFields = Omit<z.infer<typeof RunWorkflowBody>, "input" | "payload">;

function toRunRequest(workflowId: string, input: unknown, o: RunFields): RunRequest {
  return {
    workflowId,
    input: input ?? {},
    deploymentId: o.deployment_id,
    queueName: o.queue_name,
    concurrencyKey: o.concurrency_key,
    runTimeoutSeconds: o.run_timeout_seconds,
    initialState: o.initial_state,
    sessionId: o.session_id,
    userId: o.user_id,
    parentExecutionId: o.parent_execution_id,
    rootExecutionId: o.root_execution_id,
    stepKey: o.step_key,
    waitForSubworkflow: o.wait_for_subworkflow,
    otelTraceparent: o.otel_traceparent,
    channelContext: o.channel_context,
    queueConcurrencyLimit: o.queue_concurrency_limit,
  };
}

/**
 * A `?wait=` request: it takes one of its key's long-poll slots (429 when all are held), and the wait
 * stops at once when the client goes away (the request's signal).
 */
async function longPoll<T>(c: Context<ApiEnv>, wait: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const principal = c.get("principal");
  const release = principal.kind === "project" ? c.get("limits").longPolls.take(principal.keyId) : () => {};
  if (!release) {
    throw new SpoolError(
      "RATE_LIMITED",
      `this API key already holds ${c.get("limits").longPolls.max} waiting requests here; wait for one to end`,
    );
  }
  try {
    return await wait(c.req.raw.signal);
  } finally {
    release();
  }
}

export function registerExecutions(app: App) {
  app.openapi(runWorkflow, async (c) => {
    const { input, payload, ...options } = c.req.valid("json");
    const request = toRunRequest(c.req.valid("param").workflow_id, input ?? payload, options);
    const key = c.req.header("idempotency-key");
    const { wait, until } = c.req.valid("query");
    if (wait === undefined) {
      const { receipt, replayed } = await c.get("engine").executions.run(c.get("projectId"), request, key);
      if (replayed) c.header("Idempotent-Replayed", "true");
      return c.json(receipt, 202);
    }
    const { execution: e, replayed } = await longPoll(c, (signal) =>
      c.get("engine").executions.runAndWait(c.get("projectId"), request, key, {
        waitMs: wait * 1000,
        until,
        signal,
      }),
    );
    if (replayed) c.header("Idempotent-Replayed", "true");
    const body = { ...presentExecution(e), execution_id: e.id };
    return isWaitOver(e.status, until) ? c.json(body, 200) : c.json(body, 202);
  });

  app.openapi(batchRun, async (c) => {
    const { workflows, ...shared } = c.req.valid("json");
    const requests = workflows.map(({ workflow_id, input, payload, ...own }) =>
      toRunRequest(workflow_id, input ?? payload, { ...shared, ...stripNullish(own) }),
    );
    const { receipts, replayed } = await c
      .get("engine")
      .executions.runBatch(c.get("projectId"), requests, c.req.header("idempotency-key"));
    if (replayed) c.header("Idempotent-Replayed", "true");
    return c.json({ executions: receipts }, 202);
  });

  app.openapi(listExecutions, async (c) => {
    const q = c.req.valid("query");
    const page = await c.get("engine").executions.list(
      c.get("projectId"),
      {
        blocked: q.blocked,
        workflowId: q.workflow_id,
        status: q.status,
        queueName: q.queue_name,
        parentExecutionId: q.parent_execution_id,
        createdAfter: q.created_after ? new Date(q.created_after) : undefined,
        createdBefore: q.created_before ? new Date(q.created_before) : undefined,
      },
      { limit: q.limit, cursor: q.cursor },
    );
    return c.json(
      { executions: page.items.map((e) => presentExecution(e)), next_cursor: page.nextCursor },
      200,
    );
  });

  app.openapi(getExecution, async (c) => {
    const { wait, until } = c.req.valid("query");
    const id = c.req.valid("param").execution_id;
    if (wait === undefined) {
      const e = await c.get("engine").executions.get(c.get("projectId"), id);
      return c.json(presentExecution(e), 200);
    }
    const e = await longPoll(c, (signal) =>
      c.get("engine").executions.waitFor(c.get("projectId"), id, { waitMs: wait * 1000, until, signal }),
    );
    return c.json(presentExecution(e), isWaitOver(e.status, until) ? 200 : 202);
  });

  app.openapi(listSteps, async (c) => {
    const { limit, cursor } = c.req.valid("query");
    const page = await c
      .get("engine")
      .executions.steps(c.get("projectId"), c.req.valid("param").execution_id, {
        limit,
        cursor,
      });
    return c.json({ steps: page.items.map(presentStep), next_cursor: page.nextCursor }, 200);
  });

  app.openapi(resumeExecution, async (c) => {
    const { execution_id } = c.req.valid("param");
    const e = await c
      .get("engine")
      .executions.resume(c.get("projectId"), execution_id, c.req.valid("json").data);
    return c.json({ execution_id: e.id, status: presentExecution(e).status }, 202);
  });

  app.openapi(cancelExecution, async (c) => {
    const e = await c.get("engine").executions.cancel(c.get("projectId"), c.req.valid("param").execution_id);
    const { status, cancelled_at } = presentExecution(e);
    return c.json({ execution_id: e.id, status, cancelled_at }, 200);
  });
}

/** A batch item's own options override the shared ones only where it sets them. */
function stripNullish<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null)) as Partial<T>;
}
