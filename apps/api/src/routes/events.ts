import { createRoute, z } from "@hono/zod-openapi";
import {
  IdempotencyHeaders,
  ListEventsQuery,
  ListEventsResponse,
  PublishEventsBody,
  PublishEventsResponse,
  runTopic,
  StreamEventsQuery,
} from "@spool/shared";
import type { App } from "../context.js";
import { errorResponses } from "../errors.js";
import { AUTHENTICATED, json, jsonBody, ProjectHeaders } from "../openapi.js";
import type { EventHub } from "../streaming/event-hub.js";
import { streamEvents } from "../streaming/stream-events.js";

const base = { security: AUTHENTICATED, tags: ["Events"] };

const publishEvents = createRoute({
  ...base,
  method: "post",
  path: "/api/v1/events/publish",
  summary: "Publish one event (`data`) or several (`events`) to a topic",
  request: { headers: ProjectHeaders.extend(IdempotencyHeaders.shape), body: jsonBody(PublishEventsBody) },
  responses: {
    201: json(PublishEventsResponse, "Published, with their sequence ids"),
    ...errorResponses(400, 401, 403, 404, 409, 413, 415),
  },
});
const listEvents = createRoute({
  ...base,
  method: "get",
  path: "/api/v1/events",
  summary: "A topic's events after a sequence id, oldest first",
  request: { headers: ProjectHeaders, query: ListEventsQuery },
  responses: { 200: json(ListEventsResponse, "Events"), ...errorResponses(400, 401, 403, 404) },
});
/** EventSource sends the last `id:` it received on reconnect: a sequence id, like `last_sequence_id`. */
const StreamHeaders = ProjectHeaders.extend({
  "Last-Event-ID": z
    .string()
    .regex(/^\d+$/, "expected a sequence id (a non-negative integer)")
    .refine((id) => Number.isSafeInteger(Number(id)), "sequence id out of range")
    .optional()
    .openapi({ description: "Resume after this sequence id; takes precedence over `last_sequence_id`" }),
});
const streamRoute = createRoute({
  ...base,
  method: "get",
  path: "/api/v1/events/stream",
  summary: "Server-Sent Events of a topic or a workflow run; resumes from Last-Event-ID",
  description:
    "Each event is sent as `id: <sequence_id>` and `data: <event JSON>`; a comment line every 15 s keeps the " +
    "connection open. Starts after `Last-Event-ID` (header) or `last_sequence_id`; without either, a run's " +
    "stream starts at its beginning and a topic stream at the next new event.",
  request: { headers: StreamHeaders, query: StreamEventsQuery },
  responses: {
    200: { description: "An event stream", content: { "text/event-stream": { schema: { type: "string" } } } },
    ...errorResponses(400, 401, 403, 404),
  },
});

export function registerEvents(app: App, hub: EventHub, keepaliveMs: number) {
  app.openapi(publishEvents, async (c) => {
    const b = c.req.valid("json");
    const events = b.events
      ? b.events.map((e) => ({ eventType: e.event_type ?? b.event_type, data: e.data }))
      : [{ eventType: b.event_type, data: b.data ?? {} }];
    const published = await c
      .get("engine")
      .events.publish(c.get("projectId"), b.topic, events, c.req.header("idempotency-key"));
    if (published.replayed) c.header("Idempotent-Replayed", "true");
    return c.json(
      { events: published.events, sequence_ids: published.events.map((e) => e.sequence_id) },
      201,
    );
  });

  app.openapi(listEvents, async (c) => {
    const q = c.req.valid("query");
    const page = await c
      .get("engine")
      .events.history(c.get("projectId"), q.topic, q.after_sequence_id, q.limit);
    return c.json(
      { events: page.events, next_sequence_id: page.nextSequenceId, has_more: page.hasMore },
      200,
    );
  });

  app.openapi(streamRoute, async (c) => {
    const q = c.req.valid("query");
    const isRun = !q.topic;
    const topic = q.topic ?? runTopic(q.workflow_id!, q.workflow_run_id!);
    const lastEventId = c.req.valid("header")["Last-Event-ID"];
    const from = lastEventId !== undefined ? Number(lastEventId) : q.last_sequence_id;
    const after =
      from ?? (isRun ? 0 : await c.get("engine").events.latestSequence(c.get("projectId"), topic));
    return streamEvents(c, {
      hub,
      engine: c.get("engine"),
      projectId: c.get("projectId"),
      topic,
      after,
      keepaliveMs,
    });
  });
}
