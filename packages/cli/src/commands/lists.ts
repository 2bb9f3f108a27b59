import type { ListEventTriggersResponse, ListSchedulesResponse, ListWorkersResponse } from "@spool/shared";
import type { z } from "zod";
import type { Ctx } from "../context.js";
import { table } from "../output.js";

const PAGE = "?limit=100";

/** `spool workers` */
export async function listWorkers(ctx: Ctx) {
  const page = await ctx.client.request<z.infer<typeof ListWorkersResponse>>("GET", `/workers${PAGE}`);
  if (ctx.out.json) return ctx.out.write(`${JSON.stringify(page)}\n`);
  table(
    ctx.out,
    ["ID", "DEPLOYMENT", "MODE", "STATUS", "RUNNING", "LAST HEARTBEAT"],
    page.workers.map((w) => [
      w.id,
      w.deployment_id,
      w.mode,
      w.status,
      w.running_executions,
      w.last_heartbeat_at,
    ]),
  );
}

/** `spool queues` */
export async function listQueues(ctx: Ctx) {
  const page = await ctx.client.queues.list({ limit: 100 });
  if (ctx.out.json) return ctx.out.write(`${JSON.stringify(page)}\n`);
  table(
    ctx.out,
    ["QUEUE", "LIMIT", "QUEUED", "RUNNING", "WAITING FOR SLOT", "CONSUMERS"],
    page.queues.map((q) => [
      q.name,
      q.concurrency_limit,
      q.queued,
      q.running,
      q.waiting_for_slot,
      q.consumers,
    ]),
  );
}

/** `spool schedules` */
export async function listSchedules(ctx: Ctx) {
  const page = await ctx.client.request<z.infer<typeof ListSchedulesResponse>>("GET", `/schedules${PAGE}`);
  if (ctx.out.json) return ctx.out.write(`${JSON.stringify(page)}\n`);
  table(
    ctx.out,
    ["ID", "WORKFLOW", "CRON", "TIMEZONE", "STATUS", "NEXT RUN"],
    page.schedules.map((s) => [s.id, s.workflow_id, s.cron, s.timezone, s.status, s.next_run_at]),
  );
}

/** `spool triggers` */
export async function listTriggers(ctx: Ctx) {
  const page = await ctx.client.request<z.infer<typeof ListEventTriggersResponse>>(
    "GET",
    `/event-triggers${PAGE}`,
  );
  if (ctx.out.json) return ctx.out.write(`${JSON.stringify(page)}\n`);
  table(
    ctx.out,
    ["ID", "WORKFLOW", "TOPIC", "BATCH", "TIMEOUT", "QUEUE", "STATUS"],
    page.triggers.map((t) => [
      t.id,
      t.workflow_id,
      t.event_topic,
      t.batch_size,
      t.batch_timeout_seconds,
      t.queue_name,
      t.status,
    ]),
  );
}
