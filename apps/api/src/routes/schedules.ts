import { createRoute } from "@hono/zod-openapi";
import {
  CreateScheduleBody,
  ListSchedulesResponse,
  PageQuery,
  ScheduleParams,
  ScheduleResponse,
  UpdateScheduleBody,
} from "@spool/shared";
import type { App } from "../context.js";
import { errorResponses } from "../errors.js";
import { AUTHENTICATED, json, jsonBody, ProjectHeaders } from "../openapi.js";
import { presentSchedule } from "../presenters.js";

const base = { security: AUTHENTICATED, tags: ["Schedules"] };

const createSchedule = createRoute({
  ...base,
  method: "post",
  path: "/api/v1/schedules",
  summary: "Create the schedule of (workflow_id, key), or update it",
  description:
    "A fired run's input is the schedule's `input` plus `schedule: {schedule_id, key, timestamp, last_timestamp, " +
    "timezone, upcoming}`. Every occurrence fires once, across scheduler replicas and restarts. Posting an " +
    "existing schedule changes only the fields sent and keeps its status; its next occurrence is kept unless " +
    "`cron` or `timezone` change.",
  request: { headers: ProjectHeaders, body: jsonBody(CreateScheduleBody) },
  responses: { 201: json(ScheduleResponse, "The schedule"), ...errorResponses(400, 401, 403, 404, 413, 415) },
});
const listSchedules = createRoute({
  ...base,
  method: "get",
  path: "/api/v1/schedules",
  summary: "List schedules, oldest first",
  request: { headers: ProjectHeaders, query: PageQuery },
  responses: { 200: json(ListSchedulesResponse, "Schedules"), ...errorResponses(400, 401, 403, 404) },
});
const getSchedule = createRoute({
  ...base,
  method: "get",
  path: "/api/v1/schedules/{schedule_id}",
  summary: "Get a schedule",
  request: { headers: ProjectHeaders, params: ScheduleParams },
  responses: { 200: json(ScheduleResponse, "The schedule"), ...errorResponses(400, 401, 403, 404) },
});
const updateSchedule = createRoute({
  ...base,
  method: "patch",
  path: "/api/v1/schedules/{schedule_id}",
  summary: "Pause, resume or change a schedule",
  request: { headers: ProjectHeaders, params: ScheduleParams, body: jsonBody(UpdateScheduleBody) },
  responses: { 200: json(ScheduleResponse, "The schedule"), ...errorResponses(400, 401, 403, 404, 413, 415) },
});
const deleteSchedule = createRoute({
  ...base,
  method: "delete",
  path: "/api/v1/schedules/{schedule_id}",
  summary: "Delete a schedule",
  request: { headers: ProjectHeaders, params: ScheduleParams },
  responses: { 204: { description: "Deleted" }, ...errorResponses(400, 401, 403, 404) },
});

export function registerSchedules(app: App) {
  app.openapi(createSchedule, async (c) => {
    const b = c.req.valid("json");
    const s = await c.get("engine").schedules.upsert(c.get("projectId"), {
      workflowId: b.workflow_id,
      cron: b.cron,
      timezone: b.timezone,
      key: b.key,
      input: b.input,
      overlapPolicy: b.overlap_policy,
      catchupWindowSeconds: b.catchup_window_seconds,
    });
    return c.json(presentSchedule(s), 201);
  });

  app.openapi(listSchedules, async (c) => {
    const page = await c.get("engine").schedules.list(c.get("projectId"), c.req.valid("query"));
    return c.json({ schedules: page.items.map(presentSchedule), next_cursor: page.nextCursor }, 200);
  });

  app.openapi(getSchedule, async (c) => {
    return c.json(
      presentSchedule(
        await c.get("engine").schedules.get(c.get("projectId"), c.req.valid("param").schedule_id),
      ),
      200,
    );
  });

  app.openapi(updateSchedule, async (c) => {
    const b = c.req.valid("json");
    const s = await c.get("engine").schedules.update(c.get("projectId"), c.req.valid("param").schedule_id, {
      status: b.status,
      cron: b.cron,
      timezone: b.timezone,
      input: b.input,
      overlapPolicy: b.overlap_policy,
      catchupWindowSeconds: b.catchup_window_seconds,
    });
    return c.json(presentSchedule(s), 200);
  });

  app.openapi(deleteSchedule, async (c) => {
    await c.get("engine").schedules.remove(c.get("projectId"), c.req.valid("param").schedule_id);
    return c.body(null, 204);
  });
}
