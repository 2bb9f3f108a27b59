import { createRoute } from "@hono/zod-openapi";
import {
  ActiveWorkersResponse,
  HeartbeatBody,
  HeartbeatResponse,
  ListWorkersQuery,
  ListWorkersResponse,
  PageQuery,
  RegisterWorkerBody,
  RegisterWorkerResponse,
  WorkerParams,
  WorkerResponse,
  WorkerStateResponse,
  WorkerStatusQuery,
  WorkerStatusResponse,
} from "@spool/shared";
import type { App } from "../context.js";
import { errorResponses } from "../errors.js";
import { AUTHENTICATED, json, jsonBody, ProjectHeaders } from "../openapi.js";
import { presentWorker } from "../presenters.js";

const base = { security: AUTHENTICATED, tags: ["Workers"] };
const WRITE_ERRORS = errorResponses(400, 401, 403, 404, 413, 415);
const READ_ERRORS = errorResponses(400, 401, 403, 404);

const registerWorker = createRoute({
  ...base,
  method: "post",
  path: "/api/v1/workers/register",
  summary: "Register a worker process (its deployment is created if new); a push worker gets its push secret",
  request: { headers: ProjectHeaders, body: jsonBody(RegisterWorkerBody) },
  responses: { 200: json(RegisterWorkerResponse, "Registered"), ...WRITE_ERRORS },
});
const heartbeat = createRoute({
  ...base,
  method: "post",
  path: "/api/v1/workers/{worker_id}/heartbeat",
  summary: "Heartbeat; re_register=true when the server no longer counts this worker as live",
  request: {
    headers: ProjectHeaders,
    params: WorkerParams,
    body: { required: false, content: { "application/json": { schema: HeartbeatBody } } },
  },
  responses: { 200: json(HeartbeatResponse, "Recorded"), ...WRITE_ERRORS },
});
const setOnline = createRoute({
  ...base,
  method: "post",
  path: "/api/v1/workers/{worker_id}/online",
  summary: "Mark a worker online",
  request: { headers: ProjectHeaders, params: WorkerParams },
  responses: { 200: json(WorkerStateResponse, "Online"), ...READ_ERRORS },
});
const deregister = createRoute({
  ...base,
  method: "post",
  path: "/api/v1/workers/{worker_id}/deregister",
  summary: "Deregister a worker (it stops counting as live at once)",
  request: { headers: ProjectHeaders, params: WorkerParams },
  responses: { 200: json(WorkerStateResponse, "Offline"), ...READ_ERRORS },
});
const listWorkers = createRoute({
  ...base,
  method: "get",
  path: "/api/v1/workers",
  summary: "List workers",
  request: { headers: ProjectHeaders, query: ListWorkersQuery.extend(PageQuery.shape) },
  responses: { 200: json(ListWorkersResponse, "Workers, oldest first"), ...READ_ERRORS },
});
const workerStatus = createRoute({
  ...base,
  method: "get",
  path: "/api/v1/workers/status",
  summary: "How many workers of a deployment are online",
  request: { headers: ProjectHeaders, query: WorkerStatusQuery },
  responses: { 200: json(WorkerStatusResponse, "Status"), ...READ_ERRORS },
});
const activeWorkers = createRoute({
  ...base,
  method: "get",
  path: "/api/v1/workers/active",
  summary: "Ids of the online workers",
  request: { headers: ProjectHeaders },
  responses: { 200: json(ActiveWorkersResponse, "Online worker ids"), ...READ_ERRORS },
});
const getWorker = createRoute({
  ...base,
  method: "get",
  path: "/api/v1/workers/{worker_id}",
  summary: "Get a worker",
  request: { headers: ProjectHeaders, params: WorkerParams },
  responses: { 200: json(WorkerResponse, "The worker"), ...READ_ERRORS },
});

export function registerWorkers(app: App) {
  app.openapi(registerWorker, async (c) => {
    const b = c.req.valid("json");
    const w = await c.get("engine").workers.register(c.get("projectId"), {
      deploymentId: b.deployment_id,
      mode: b.mode,
      capabilities: b.capabilities,
      maxConcurrentExecutions: b.max_concurrent_executions,
      pushEndpointUrl: b.push_endpoint_url,
      hostname: b.hostname,
      heartbeatIntervalSeconds: b.heartbeat_interval_seconds,
    });
    return c.json(
      { worker_id: w.id, heartbeat_interval_seconds: w.heartbeatIntervalSeconds, push_secret: w.pushSecret },
      200,
    );
  });

  app.openapi(heartbeat, async (c) => {
    // The body is optional: without one the validator yields {}.
    const running = c.req.valid("json")?.running;
    const { reRegister } = await c
      .get("engine")
      .workers.heartbeat(c.get("projectId"), c.req.valid("param").worker_id, running);
    return c.json({ re_register: reRegister }, 200);
  });

  app.openapi(setOnline, async (c) => {
    const w = await c
      .get("engine")
      .workers.setStatus(c.get("projectId"), c.req.valid("param").worker_id, "online");
    return c.json({ worker_id: w.id, status: "online" } as const, 200);
  });

  app.openapi(deregister, async (c) => {
    const w = await c
      .get("engine")
      .workers.setStatus(c.get("projectId"), c.req.valid("param").worker_id, "offline");
    return c.json({ worker_id: w.id, status: "offline" } as const, 200);
  });

  // Static paths before /{worker_id}, which would otherwise match "status" and "active".
  app.openapi(workerStatus, async (c) => {
    const s = await c.get("engine").workers.status(c.get("projectId"), c.req.valid("query").deployment_id);
    return c.json({ online_count: s.onlineCount, has_workers: s.hasWorkers }, 200);
  });

  app.openapi(activeWorkers, async (c) => {
    return c.json({ worker_ids: await c.get("engine").workers.activeIds(c.get("projectId")) }, 200);
  });

  app.openapi(listWorkers, async (c) => {
    const { deployment_id, status, ...page } = c.req.valid("query");
    const result = await c
      .get("engine")
      .workers.list(c.get("projectId"), { deploymentId: deployment_id, status }, page);
    return c.json({ workers: result.items.map(presentWorker), next_cursor: result.nextCursor }, 200);
  });

  app.openapi(getWorker, async (c) => {
    return c.json(
      presentWorker(await c.get("engine").workers.get(c.get("projectId"), c.req.valid("param").worker_id)),
      200,
    );
  });
}
