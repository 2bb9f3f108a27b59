import { z } from "@hono/zod-openapi";
import { EXECUTION_STATUSES, WAIT_UNTIL } from "../execution-status.js";
import { ClientId, Uuid } from "../ids.js";
import { NextCursor } from "../pagination.js";
import { JsonObject, JsonValue, NullableTimestamp, OffsetTimestamp, Text, Timestamp } from "./common.js";

export const ExecutionParams = z.object({
  execution_id: z.string().openapi({ param: { name: "execution_id", in: "path" } }),
});

/** Options a run may carry, in single and batch runs alike. */
const RunOptions = {
  deployment_id: ClientId.nullish(),
  queue_name: ClientId.nullish(),
  concurrency_key: Text.max(500).nullish(),
  run_timeout_seconds: z
    .number()
    .int()
    .min(1)
    .max(365 * 86400)
    .nullish(),
  initial_state: JsonObject.nullish(),
  session_id: Text.max(500).nullish(),
  user_id: Text.max(500).nullish(),
  parent_execution_id: Uuid.nullish(),
  root_execution_id: Uuid.nullish(),
  step_key: Text.max(500).nullish(),
  wait_for_subworkflow: z.boolean().nullish(),
  otel_traceparent: Text.max(200)
    .nullish()
    .openapi({ description: "W3C traceparent; echoed to a push worker" }),
  channel_context: JsonObject.nullish().openapi({ description: "Opaque; echoed to a push worker" }),
  queue_concurrency_limit: z.number().int().min(1).max(100_000).nullish().openapi({
    description: "Creates the run's queue with this limit when the queue does not exist yet",
  }),
};

export const RunWorkflowBody = z
  .object({
    input: JsonObject.optional().openapi({ description: "The run's input (alias: payload)" }),
    payload: JsonValue.optional().openapi({
      description: "Alias of input; any JSON (the worker protocol's field)",
    }),
    ...RunOptions,
  })
  .openapi("RunWorkflowBody");

export const RunWorkflowResponse = z
  .object({
    execution_id: Uuid,
    workflow_id: z.string(),
    status: z.literal("queued"),
    queue_name: z.string(),
    created_at: Timestamp,
  })
  .openapi("RunWorkflowResponse");

export const BatchRunBody = z
  .object({
    workflows: z
      .array(
        z.object({
          workflow_id: ClientId,
          input: JsonObject.optional(),
          payload: JsonValue.optional(),
          ...RunOptions,
        }),
      )
      .min(1)
      .max(1000),
    ...RunOptions,
  })
  .openapi("BatchRunBody");

export const BatchRunResponse = z
  .object({ executions: z.array(RunWorkflowResponse) })
  .openapi("BatchRunResponse");

export const ExecutionStatusEnum = z.enum(EXECUTION_STATUSES).openapi("ExecutionStatus");

export const ExecutionError = z
  .object({
    name: z.string(),
    message: z.string(),
    step_key: z.string().optional(),
    stack: z.string().optional(),
    non_retryable: z.boolean().optional(),
  })
  .openapi("ExecutionError");

export const BlockedReasonEnum = z.enum(["no_worker", "concurrency_limit"]).openapi({
  description:
    "no_worker: no online worker serves the run's workflow; concurrency_limit: its queue's limit is " +
    "reached for its concurrency key (it starts when a run of that partition ends)",
});

export const BlockedResponse = z
  .object({ reason: BlockedReasonEnum, message: z.string(), since: Timestamp })
  .openapi("Blocked");

export const ExecutionResponse = z
  .object({
    id: Uuid,
    workflow_id: z.string(),
    status: ExecutionStatusEnum,
    input: JsonValue,
    result: JsonValue,
    error: ExecutionError.nullable(),
    queue_name: z.string(),
    deployment_id: z.string(),
    concurrency_key: z.string().nullable(),
    attempt: z.number().int(),
    parent_execution_id: Uuid.nullable(),
    root_execution_id: Uuid.nullable(),
    step_key: z.string().nullable(),
    suspended_step_key: z.string().nullable(),
    suspended_data: JsonValue.openapi({
      description: "The data the suspended step showed (e.g. what to approve)",
    }),
    session_id: z.string().nullable(),
    user_id: z.string().nullable(),
    blocked: BlockedResponse.nullable().openapi({
      description: "Why a queued run is not running yet; null when nothing holds it back",
    }),
    created_at: Timestamp,
    started_at: NullableTimestamp,
    completed_at: NullableTimestamp,
    cancelled_at: NullableTimestamp,
  })
  .openapi("Execution");

export const ListExecutionsQuery = z.object({
  blocked: BlockedReasonEnum.optional().openapi({
    description: "Only queued runs held back for this reason",
  }),
  workflow_id: ClientId.optional(),
  status: ExecutionStatusEnum.optional(),
  queue_name: ClientId.optional(),
  parent_execution_id: Uuid.optional(),
  created_after: OffsetTimestamp.optional(),
  created_before: OffsetTimestamp.optional(),
});

export const ListExecutionsResponse = z
  .object({ executions: z.array(ExecutionResponse), next_cursor: NextCursor })
  .openapi("ListExecutionsResponse");

export const StepResponse = z
  .object({
    step_key: z.string(),
    kind: z.string(),
    status: z.enum(["completed", "failed", "pending"]).openapi({
      description: "pending: a wait the run is parked on (sleep, event, input, child runs)",
    }),
    output: JsonValue,
    error: ExecutionError.nullable(),
    attempts: z.number().int(),
    started_at: NullableTimestamp,
    completed_at: NullableTimestamp,
    wake_at: NullableTimestamp.optional().openapi({ description: "Pending sleep: when it ends" }),
    expires_at: NullableTimestamp.optional().openapi({
      description: "Pending event, input or child wait: when it times out (null: never)",
    }),
    topic: z.string().nullable().optional().openapi({ description: "Pending event wait: its topic" }),
    child_execution_id: Uuid.nullable()
      .optional()
      .openapi({ description: "Pending child wait: the child run" }),
    child_execution_ids: z.array(Uuid).optional().openapi({
      description: "Pending child wait: every child run it waits for (a batch)",
    }),
  })
  .openapi("Step");

export const ListStepsResponse = z
  .object({
    steps: z
      .array(StepResponse)
      .openapi({ description: "One page of the steps, in the order the run reached them" }),
    next_cursor: NextCursor,
  })
  .openapi("ListStepsResponse");

export const ResumeExecutionBody = z
  .object({ data: JsonObject.default({}).openapi({ description: "Returned by the suspended step" }) })
  .openapi("ResumeExecutionBody");

export const ResumeExecutionResponse = z
  .object({ execution_id: Uuid, status: ExecutionStatusEnum })
  .openapi("ResumeExecutionResponse");

export const CancelExecutionResponse = z
  .object({ execution_id: Uuid, status: ExecutionStatusEnum, cancelled_at: NullableTimestamp })
  .openapi("CancelExecutionResponse");

export const IdempotencyHeaders = z.object({
  "Idempotency-Key": Text.min(1)
    .max(255)
    .optional()
    .openapi({ param: { in: "header" }, description: "A repeat within 24 h returns the first response" }),
});

/** Long-poll: wait up to this many seconds for the run to finish. */
export const WaitQuery = z.object({
  wait: z.coerce.number().min(0).max(120).optional().openapi({
    description:
      "Seconds to wait (max 120) for what `until` names: 200 when it happened, 202 with the run as it stands otherwise",
  }),
  until: z.enum(WAIT_UNTIL).default("terminal").openapi({
    description:
      "terminal: completed, failed or cancelled; blocked: that, or waiting (timer, event, child) or suspended (needs resume)",
  }),
});

export const RunAndWaitResponse = ExecutionResponse.extend({ execution_id: Uuid }).openapi(
  "RunAndWaitResponse",
);
