// Registration of what workers host (deployments, workflows, queues) and reading it back.
import { createRoute, type z } from "@hono/zod-openapi";
import {
  DeploymentDetailResponse,
  DeploymentParams,
  DeploymentQuery,
  ListDeploymentsResponse,
  ListQueuesResponse,
  ListWorkflowsResponse,
  PageQuery,
  RegisterDeploymentBody,
  RegisterDeploymentResponse,
  RegisterQueuesBody,
  RegisterQueuesResponse,
  RegisterWorkflowsBody,
  RegisterWorkflowsResponse,
  WorkflowParams,
  WorkflowResponse,
} from "@spool/shared";
import type { App } from "../context.js";
import { errorResponses } from "../errors.js";
import { AUTHENTICATED, json, jsonBody, ProjectHeaders } from "../openapi.js";
import { presentDeployment, presentQueueState, presentWorkflow } from "../presenters.js";

const base = { security: AUTHENTICATED } as const;
const WRITE_ERRORS = errorResponses(400, 401, 403, 404, 413, 415);
const READ_ERRORS = errorResponses(400, 401, 403, 404);

const registerDeployment = createRoute({
  ...base,
  method: "post",
  path: "/api/v1/workers/deployments",
  tags: ["Deployments"],
  summary: "Register (upsert) a deployment: a named version of worker code",
  request: { headers: ProjectHeaders, body: jsonBody(RegisterDeploymentBody) },
  responses: { 200: json(RegisterDeploymentResponse, "Registered"), ...WRITE_ERRORS },
});

const registerWorkflows = createRoute({
  ...base,
  method: "post",
  path: "/api/v1/workers/deployments/{deployment_id}/workflows",
  tags: ["Workflows"],
  summary: "Register (upsert) one workflow, or `{workflows:[...]}`, in a deployment",
  request: { headers: ProjectHeaders, params: DeploymentParams, body: jsonBody(RegisterWorkflowsBody) },
  responses: { 200: json(RegisterWorkflowsResponse, "Registered"), ...WRITE_ERRORS },
});

const registerQueues = createRoute({
  ...base,
  method: "post",
  path: "/api/v1/workers/queues",
  tags: ["Workers"],
  summary: "Register (upsert) the project's queues and their concurrency limits",
  request: { headers: ProjectHeaders, body: jsonBody(RegisterQueuesBody) },
  responses: { 200: json(RegisterQueuesResponse, "Registered"), ...WRITE_ERRORS },
});

const listQueues = createRoute({
  ...base,
  method: "get",
  path: "/api/v1/queues",
  tags: ["Queues"],
  summary: "The project's queues: each one's limit, queued and running runs, and consumers",
  description:
    "A queue is a lane: the `queue_name` a run, trigger or schedule names, or its workflow's. Its " +
    "`concurrency_limit` holds per concurrency key; `waiting_for_slot` counts queued runs held back by it.",
  request: { headers: ProjectHeaders, query: PageQuery },
  responses: { 200: json(ListQueuesResponse, "Queues"), ...READ_ERRORS },
});

const listDeployments = createRoute({
  ...base,
  method: "get",
  path: "/api/v1/deployments",
  tags: ["Deployments"],
  summary: "List deployments",
  request: { headers: ProjectHeaders, query: PageQuery },
  responses: { 200: json(ListDeploymentsResponse, "Deployments by id"), ...READ_ERRORS },
});

const getDeployment = createRoute({
  ...base,
  method: "get",
  path: "/api/v1/deployments/{deployment_id}",
  tags: ["Deployments"],
  summary: "Get a deployment and its workflows",
  request: { headers: ProjectHeaders, params: DeploymentParams },
  responses: { 200: json(DeploymentDetailResponse, "The deployment"), ...READ_ERRORS },
});

const ARCHIVE_DESCRIPTION =
  "It leaves the lists and cannot be run; its event triggers and schedules pause. 409 while a worker of " +
  "its deployment is online, or while it has runs not finished. A worker registering it again brings it back.";

const archiveDeployment = createRoute({
  ...base,
  method: "delete",
  path: "/api/v1/deployments/{deployment_id}",
  tags: ["Deployments"],
  summary: "Archive a deployment no worker runs any more, with its workflows",
  description: ARCHIVE_DESCRIPTION,
  request: { headers: ProjectHeaders, params: DeploymentParams },
  responses: { 204: { description: "Archived" }, ...errorResponses(400, 401, 403, 404, 409) },
});

const archiveWorkflow = createRoute({
  ...base,
  method: "delete",
  path: "/api/v1/workflows/{workflow_id}",
  tags: ["Workflows"],
  summary: "Archive a workflow (or agent, or tool) no worker serves any more, in every deployment",
  description: ARCHIVE_DESCRIPTION,
  request: { headers: ProjectHeaders, params: WorkflowParams },
  responses: { 204: { description: "Archived" }, ...errorResponses(400, 401, 403, 404, 409) },
});

const listWorkflows = createRoute({
  ...base,
  method: "get",
  path: "/api/v1/workflows",
  tags: ["Workflows"],
  summary: "The project's workflows (each at its latest deployment)",
  request: { headers: ProjectHeaders, query: PageQuery },
  responses: { 200: json(ListWorkflowsResponse, "Workflows by id"), ...READ_ERRORS },
});

const getWorkflow = createRoute({
  ...base,
  method: "get",
  path: "/api/v1/workflows/{workflow_id}",
  tags: ["Workflows"],
  summary: "Get a workflow (latest deployment unless deployment_id is given)",
  request: { headers: ProjectHeaders, params: WorkflowParams, query: DeploymentQuery },
  responses: { 200: json(WorkflowResponse, "The workflow"), ...READ_ERRORS },
});

type RegisterWorkflowsInput = z.infer<typeof RegisterWorkflowsBody>;
const workflowItems = (body: RegisterWorkflowsInput) => ("workflows" in body ? body.workflows : [body]);

export function registerRegistry(app: App) {
  app.openapi(registerDeployment, async (c) => {
    const { deployment_id } = c.req.valid("json");
    const d = await c.get("engine").registry.registerDeployment(c.get("projectId"), deployment_id);
    return c.json({ deployment_id: d.deploymentId, status: d.status }, 200);
  });

  app.openapi(registerWorkflows, async (c) => {
    const items = workflowItems(c.req.valid("json")).map((w) => ({
      workflowId: w.workflow_id,
      workflowType: w.workflow_type,
      triggerOnEvent: w.trigger_on_event,
      scheduled: w.scheduled,
      queueName: w.queue_name,
    }));
    const { deployment_id } = c.req.valid("param");
    const rows = await c.get("engine").registry.registerWorkflows(c.get("projectId"), deployment_id, items);
    return c.json({ workflows: rows.map(presentWorkflow) }, 200);
  });

  app.openapi(registerQueues, async (c) => {
    const { deployment_id, queues } = c.req.valid("json");
    const input = queues.map((q) => ({ name: q.name, concurrencyLimit: q.concurrency_limit }));
    const rows = await c.get("engine").registry.registerQueues(c.get("projectId"), deployment_id, input);
    return c.json(
      { queues: rows.map((q) => ({ name: q.name, concurrency_limit: q.concurrencyLimit })) },
      200,
    );
  });

  app.openapi(listQueues, async (c) => {
    const page = await c.get("engine").registry.listQueues(c.get("projectId"), c.req.valid("query"));
    return c.json({ queues: page.items.map(presentQueueState), next_cursor: page.nextCursor }, 200);
  });

  app.openapi(listDeployments, async (c) => {
    const page = await c.get("engine").registry.listDeployments(c.get("projectId"), c.req.valid("query"));
    return c.json({ deployments: page.items.map(presentDeployment), next_cursor: page.nextCursor }, 200);
  });

  app.openapi(getDeployment, async (c) => {
    const d = await c
      .get("engine")
      .registry.getDeployment(c.get("projectId"), c.req.valid("param").deployment_id);
    return c.json({ ...presentDeployment(d), workflows: d.workflows.map(presentWorkflow) }, 200);
  });

  app.openapi(archiveDeployment, async (c) => {
    await c.get("engine").registry.archiveDeployment(c.get("projectId"), c.req.valid("param").deployment_id);
    return c.body(null, 204);
  });

  app.openapi(archiveWorkflow, async (c) => {
    await c.get("engine").registry.archiveWorkflow(c.get("projectId"), c.req.valid("param").workflow_id);
    return c.body(null, 204);
  });

  app.openapi(listWorkflows, async (c) => {
    const page = await c.get("engine").registry.listWorkflows(c.get("projectId"), c.req.valid("query"));
    return c.json({ workflows: page.items.map(presentWorkflow), next_cursor: page.nextCursor }, 200);
  });

  app.openapi(getWorkflow, async (c) => {
    const { workflow_id } = c.req.valid("param");
    const w = await c
      .get("engine")
      .registry.getWorkflow(c.get("projectId"), workflow_id, c.req.valid("query").deployment_id);
    return c.json(presentWorkflow(w), 200);
  });
}
