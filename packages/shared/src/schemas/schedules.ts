import { z } from "@hono/zod-openapi";
import { ClientId, Uuid } from "../ids.js";
import { NextCursor } from "../pagination.js";
import { JsonObject, NullableTimestamp, Text, Timestamp } from "./common.js";

export const OVERLAP_POLICIES = ["skip", "buffer_one", "allow_all"] as const;

const Cron = Text.min(1)
  .max(200)
  .openapi({ example: "0 9 * * 1-5", description: "5 fields, Unix day-of-week" });
const Timezone = Text.min(1).max(100).openapi({ example: "Europe/Berlin", description: "IANA timezone" });

export const CreateScheduleBody = z
  .object({
    workflow_id: ClientId,
    cron: Cron,
    // Optional, not defaulted here: on an existing schedule a field left out keeps its value; the
    // engine applies the defaults on create.
    timezone: Timezone.optional().openapi({ default: "UTC" }),
    key: Text.min(1).max(200).default("global"),
    input: JsonObject.optional(),
    overlap_policy: z.enum(OVERLAP_POLICIES).optional().openapi({ default: "skip" }),
    catchup_window_seconds: z
      .number()
      .int()
      .min(0)
      .max(365 * 86400)
      .optional()
      .openapi({ default: 0 }),
  })
  .openapi("CreateScheduleBody");

export const UpdateScheduleBody = z
  .object({
    status: z.enum(["active", "paused"]).optional(),
    cron: Cron.optional(),
    timezone: Timezone.optional(),
    input: JsonObject.optional(),
    overlap_policy: z.enum(OVERLAP_POLICIES).optional(),
    catchup_window_seconds: z
      .number()
      .int()
      .min(0)
      .max(365 * 86400)
      .optional(),
  })
  .openapi("UpdateScheduleBody");

export const ScheduleResponse = z
  .object({
    id: Uuid,
    schedule_id: Uuid,
    workflow_id: z.string(),
    cron: z.string(),
    timezone: z.string(),
    key: z.string(),
    input: JsonObject,
    status: z.enum(["active", "paused"]),
    overlap_policy: z.enum(OVERLAP_POLICIES),
    catchup_window_seconds: z.number().int(),
    last_run_at: NullableTimestamp,
    next_run_at: NullableTimestamp,
    created_at: Timestamp,
  })
  .openapi("Schedule");

export const ListSchedulesResponse = z
  .object({ schedules: z.array(ScheduleResponse), next_cursor: NextCursor })
  .openapi("ListSchedulesResponse");
export const ScheduleParams = z.object({
  schedule_id: z.string().openapi({ param: { name: "schedule_id", in: "path" } }),
});
