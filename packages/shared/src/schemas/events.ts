import { z } from "@hono/zod-openapi";
import { ClientId, Uuid } from "../ids.js";
import { JsonObject, JsonValue, Text, Timestamp } from "./common.js";

export const Topic = Text.min(1).max(500).openapi({ example: "orders" });

export const PublishEventsBody = z
  .object({
    topic: Topic,
    data: JsonObject.optional().openapi({ description: "One event's data (or use `events`)" }),
    event_type: Text.max(200).nullish(),
    events: z
      .array(z.object({ event_type: Text.max(200).nullish(), data: JsonObject }))
      .min(1)
      .max(1000)
      .optional(),
  })
  .refine((b) => (b.data === undefined) !== (b.events === undefined), {
    message: "give either `data` (one event) or `events` (several), not both",
    path: ["data"],
  })
  .openapi("PublishEventsBody");

export const EventResponse = z
  .object({
    id: Uuid,
    sequence_id: z.number().int(),
    topic: z.string(),
    event_type: z.string().nullable(),
    data: JsonValue,
    created_at: Timestamp,
  })
  .openapi("Event");

export const PublishEventsResponse = z
  .object({ events: z.array(EventResponse), sequence_ids: z.array(z.number().int()) })
  .openapi("PublishEventsResponse");

export const ListEventsQuery = z.object({
  topic: Topic,
  after_sequence_id: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(500).default(50),
});

export const ListEventsResponse = z
  .object({ events: z.array(EventResponse), next_sequence_id: z.number().int(), has_more: z.boolean() })
  .openapi("ListEventsResponse");

export const StreamEventsQuery = z
  .object({
    topic: Topic.optional(),
    workflow_id: ClientId.optional(),
    workflow_run_id: Uuid.optional(),
    last_sequence_id: z.coerce.number().int().min(0).optional(),
  })
  .refine((q) => Boolean(q.topic) !== Boolean(q.workflow_id && q.workflow_run_id), {
    message: "give `topic`, or `workflow_id` and `workflow_run_id`",
    path: ["topic"],
  });
