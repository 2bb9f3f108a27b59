import { createRoute } from "@hono/zod-openapi";
import {
  EventTriggerParams,
  EventTriggerResponse,
  ListEventTriggersResponse,
  PageQuery,
  RegisterEventTriggerBody,
  RegisterEventTriggerResponse,
  UpdateEventTriggerBody,
} from "@spool/shared";
import type { App } from "../context.js";
import { errorResponses } from "../errors.js";
import { AUTHENTICATED, json, jsonBody, ProjectHeaders } from "../openapi.js";
import { presentTrigger } from "../presenters.js";

const base = { security: AUTHENTICATED, tags: ["Event Triggers"] };

const registerTrigger = createRoute({
  ...base,
  method: "post",
  path: "/api/v1/event-triggers/register",
  operationId: "register_event_trigger",
  summary: "Start a workflow with batches of a topic's events (upsert per workflow and topic)",
  description:
    "Fires when `batch_size` unconsumed events are collected, or when the oldest is `batch_timeout_seconds` old. " +
    "Starts at registration: earlier events are not delivered. The run's input is `{events:[...], trigger_id}`.",
  request: { headers: ProjectHeaders, body: jsonBody(RegisterEventTriggerBody) },
  responses: {
    200: json(RegisterEventTriggerResponse, "Registered"),
    ...errorResponses(400, 401, 403, 404, 413, 415),
  },
});
const listTriggers = createRoute({
  ...base,
  method: "get",
  path: "/api/v1/event-triggers",
  summary: "List event triggers, oldest first",
  request: { headers: ProjectHeaders, query: PageQuery },
  responses: { 200: json(ListEventTriggersResponse, "Triggers"), ...errorResponses(400, 401, 403, 404) },
});
const updateTrigger = createRoute({
  ...base,
  method: "patch",
  path: "/api/v1/event-triggers/{trigger_id}",
  summary: "Pause or resume an event trigger",
  description:
    "Paused, it fires nothing and keeps its place: events published meanwhile are batched once it resumes. " +
    "It stays paused when a worker registers it again. 409 when resuming a trigger whose workflow no worker " +
    "registers any more.",
  request: { headers: ProjectHeaders, params: EventTriggerParams, body: jsonBody(UpdateEventTriggerBody) },
  responses: {
    200: json(EventTriggerResponse, "The trigger"),
    ...errorResponses(400, 401, 403, 404, 409, 413, 415),
  },
});
const deleteTrigger = createRoute({
  ...base,
  method: "delete",
  path: "/api/v1/event-triggers/{trigger_id}",
  summary: "Delete an event trigger",
  request: { headers: ProjectHeaders, params: EventTriggerParams },
  responses: { 204: { description: "Deleted" }, ...errorResponses(400, 401, 403, 404) },
});

export function registerTriggers(app: App) {
  app.openapi(registerTrigger, async (c) => {
    const b = c.req.valid("json");
    const trigger = await c.get("engine").triggers.register(c.get("projectId"), {
      workflowId: b.workflow_id,
      deploymentId: b.deployment_id,
      eventTopic: b.event_topic,
      batchSize: b.batch_size,
      batchTimeoutSeconds: b.batch_timeout_seconds,
      queueName: b.queue_name,
    });
    return c.json({ trigger: presentTrigger(trigger) }, 200);
  });

  app.openapi(listTriggers, async (c) => {
    const page = await c.get("engine").triggers.list(c.get("projectId"), c.req.valid("query"));
    return c.json({ triggers: page.items.map(presentTrigger), next_cursor: page.nextCursor }, 200);
  });

  app.openapi(updateTrigger, async (c) => {
    const trigger = await c
      .get("engine")
      .triggers.setStatus(c.get("projectId"), c.req.valid("param").trigger_id, c.req.valid("json").status);
    return c.json(presentTrigger(trigger), 200);
  });

  app.openapi(deleteTrigger, async (c) => {
    await c.get("engine").triggers.remove(c.get("projectId"), c.req.valid("param").trigger_id);
    return c.body(null, 204);
  });
}
