import { z } from "@hono/zod-openapi";
import { ClientId, Uuid } from "../ids.js";
import { NextCursor } from "../pagination.js";
import { Timestamp } from "./common.js";
import { Topic } from "./events.js";

export const RegisterEventTriggerBody = z
  .object({
    workflow_id: ClientId,
    deployment_id: ClientId,
    event_topic: Topic,
    batch_size: z.number().int().min(1).max(10_000),
    batch_timeout_seconds: z
      .number()
      .int()
      .min(1)
      .max(30 * 86400)
      .nullish(),
    queue_name: ClientId.nullish(),
  })
  .openapi("RegisterEventTriggerBody");

export const EventTriggerResponse = z
  .object({
    id: Uuid,
    workflow_id: z.string(),
    deployment_id: z.string(),
    event_topic: z.string(),
    batch_size: z.number().int(),
    batch_timeout_seconds: z.number().int().nullable(),
    queue_name: z.string().nullable(),
    status: z.enum(["active", "paused"]),
    paused_by_user: z.boolean().openapi({
      description:
        "Paused through the API (stays paused when a worker registers it again); a trigger paused because " +
        "no worker registers its workflow any more has false and resumes on registration",
    }),
    last_sequence_id: z
      .number()
      .int()
      .openapi({ description: "Events up to this sequence are already batched" }),
    created_at: Timestamp,
  })
  .openapi("EventTrigger");

export const RegisterEventTriggerResponse = z
  .object({ trigger: EventTriggerResponse })
  .openapi("RegisterEventTriggerResponse");
export const ListEventTriggersResponse = z
  .object({ triggers: z.array(EventTriggerResponse), next_cursor: NextCursor })
  .openapi("ListEventTriggersResponse");
export const UpdateEventTriggerBody = z
  .object({ status: z.enum(["active", "paused"]) })
  .openapi("UpdateEventTriggerBody");
export const EventTriggerParams = z.object({
  trigger_id: z.string().openapi({ param: { name: "trigger_id", in: "path" } }),
});
