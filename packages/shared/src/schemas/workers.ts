import { z } from "@hono/zod-openapi";
import { ClientId, Uuid } from "../ids.js";
import { NextCursor } from "../pagination.js";
import { isStorableText, MAX_INT4, Text, Timestamp, UNSTORABLE_TEXT } from "./common.js";

export const WORKER_MODES = ["queue", "push", "pull"] as const;
export const WORKER_STATUSES = ["online", "offline", "draining"] as const;

export const WorkerParams = z.object({
  worker_id: z.string().openapi({ param: { name: "worker_id", in: "path" } }),
});

export const WorkerCapabilities = z
  .object({
    runtime: Text.max(100).nullish(),
    workflow_ids: z.array(ClientId).max(10_000).nullish(),
    agent_ids: z.array(ClientId).max(10_000).nullish(),
    tool_ids: z.array(ClientId).max(10_000).nullish(),
    queues: z.array(ClientId).max(10_000).nullish(),
    spool_claims: z
      .boolean()
      .nullish()
      .openapi({
        description:
          "Spool: the worker's calls carry the push's claim (X-Spool-Claim), as Spool's SDK's do: Spool may " +
          "then push it a new run while the run's insert is still on its way",
      }),
    spool_push_batches: z
      .boolean()
      .nullish()
      .openapi({
        description:
          "Spool: the worker takes several runs in one `POST {push_endpoint_url}/execute-batch`, as Spool's SDK " +
          "does: pushes made while earlier ones to it are unanswered then leave together",
      }),
  })
  .openapi("WorkerCapabilities");

export const RegisterWorkerBody = z
  .object({
    deployment_id: ClientId,
    mode: z.enum(WORKER_MODES),
    capabilities: WorkerCapabilities.nullish(),
    max_concurrent_executions: z.number().int().min(1).max(100_000).nullish(),
    // z.url() passes a NUL in the path through (the URL parser would percent-encode it).
    push_endpoint_url: z.url().max(2000).refine(isStorableText, UNSTORABLE_TEXT).nullish().openapi({
      description: "push: where Spool sends runs (`POST {push_endpoint_url}/execute`); required in push mode",
    }),
    hostname: Text.max(255).nullish(),
    heartbeat_interval_seconds: z
      .number()
      .int()
      .min(1)
      .max(3600)
      .nullish()
      .openapi({
        description:
          "How often this worker heartbeats; it is offline after 3 intervals of silence. Default: the " +
          "server's interval in queue mode, 30 s (the Polos SDKs' fixed interval) in push mode",
      }),
  })
  .openapi("RegisterWorkerBody");

export const RegisterWorkerResponse = z
  .object({
    worker_id: Uuid,
    heartbeat_interval_seconds: z.number().int(),
    push_secret: z
      .string()
      .nullable()
      .openapi({
        description:
          "push: the HMAC-SHA256 key of the X-Spool-Signature header on every push " +
          '(`t=<unix seconds>,v1=<hex HMAC of "<t>.<body>">`); null in queue mode',
      }),
  })
  .openapi("RegisterWorkerResponse");

export const HeartbeatBody = z
  .object({
    running: z
      .number()
      .int()
      .min(0)
      .max(MAX_INT4)
      .nullish()
      .openapi({ description: "Executions running now" }),
  })
  .openapi("HeartbeatBody");
export const HeartbeatResponse = z
  .object({
    re_register: z.boolean().openapi({ description: "True when the server no longer knows this worker" }),
  })
  .openapi("HeartbeatResponse");

export const WorkerResponse = z
  .object({
    id: Uuid,
    deployment_id: z.string(),
    mode: z.enum(WORKER_MODES),
    status: z.enum(WORKER_STATUSES),
    capabilities: WorkerCapabilities,
    max_concurrent_executions: z.number().int().nullable(),
    running_executions: z.number().int(),
    last_heartbeat_at: Timestamp,
    registered_at: Timestamp,
    hostname: z.string().nullable(),
  })
  .openapi("Worker");

export const ListWorkersQuery = z.object({
  deployment_id: ClientId.optional(),
  status: z.enum(WORKER_STATUSES).optional(),
});
export const ListWorkersResponse = z
  .object({ workers: z.array(WorkerResponse), next_cursor: NextCursor })
  .openapi("ListWorkersResponse");
export const WorkerStatusQuery = z.object({ deployment_id: ClientId });
export const WorkerStatusResponse = z
  .object({ online_count: z.number().int(), has_workers: z.boolean() })
  .openapi("WorkerStatusResponse");
export const ActiveWorkersResponse = z.object({ worker_ids: z.array(Uuid) }).openapi("ActiveWorkersResponse");
export const WorkerStateResponse = z
  .object({ worker_id: Uuid, status: z.enum(WORKER_STATUSES) })
  .openapi("WorkerStateResponse");
