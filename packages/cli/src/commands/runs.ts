import type { Execution } from "@spool/sdk/client";
import { countArg, jsonArg, UsageError } from "../config.js";
import type { Ctx } from "../context.js";
import { brief, duration, table } from "../output.js";
import { followAndReport } from "./follow.js";

const printJson = (ctx: Ctx, value: unknown) => ctx.out.write(`${JSON.stringify(value)}\n`);

/** `spool runs list [--workflow w] [--status s] [--limit n] [--cursor c]` */
export async function listRuns(
  ctx: Ctx,
  o: { workflow?: string; status?: string; limit?: string; cursor?: string },
) {
  const page = await ctx.client.executions.list({
    workflow_id: o.workflow,
    status: o.status as Execution["status"] | undefined,
    limit: countArg(o.limit, "--limit") ?? 20,
    cursor: o.cursor,
  });
  if (ctx.out.json) return printJson(ctx, page);
  table(
    ctx.out,
    ["ID", "WORKFLOW", "STATUS", "CREATED", "TOOK"],
    page.executions.map((e) => [
      e.id,
      e.workflow_id,
      e.status,
      e.created_at,
      duration(e.created_at, e.completed_at),
    ]),
  );
  if (page.next_cursor) ctx.out.write(`more: --cursor ${page.next_cursor}\n`);
}

/** `spool runs get <id>` */
export async function getRun(ctx: Ctx, id: string) {
  const e = await ctx.client.executions.get(id);
  if (ctx.out.json) return printJson(ctx, e);
  const rows: [string, unknown][] = [
    ["id", e.id],
    ["workflow", e.workflow_id],
    ["status", e.status],
    ["queue", e.queue_name],
    ["attempt", e.attempt],
    ["created", e.created_at],
    ["completed", e.completed_at],
    ["input", e.input],
    ["result", e.result],
    ["error", e.error],
    ["suspended at", e.suspended_step_key],
    ["suspended data", e.suspended_data],
    ["blocked", e.blocked?.message],
  ];
  for (const [k, v] of rows)
    if (v !== null && v !== undefined) ctx.out.write(`${k.padEnd(15)} ${brief(v)}\n`);
}

/** `spool runs steps <id>` */
export async function runSteps(ctx: Ctx, id: string) {
  const steps = await ctx.client.executions.steps(id);
  if (ctx.out.json) return printJson(ctx, steps);
  table(
    ctx.out,
    ["STEP", "KIND", "STATUS", "ATTEMPTS", "TOOK", "OUTPUT"],
    steps.map((s) => [
      s.step_key,
      s.kind,
      s.status,
      s.attempts,
      duration(s.started_at, s.completed_at),
      s.status === "pending"
        ? `waits${s.topic ? ` for '${s.topic}'` : ""}${(s.wake_at ?? s.expires_at) ? ` until ${s.wake_at ?? s.expires_at}` : ""}`
        : brief(s.status === "failed" ? s.error?.message : s.output),
    ]),
  );
}

/** `spool runs cancel <id>` */
export async function cancelRun(ctx: Ctx, id: string) {
  const r = await ctx.client.executions.cancel(id);
  ctx.out.write(ctx.out.json ? `${JSON.stringify(r)}\n` : `${r.execution_id} ${r.status}\n`);
}

/** `spool runs resume <id> [--data <json|@file>] [--wait]` */
export async function resumeRun(ctx: Ctx, id: string, o: { data?: string; wait: boolean; timeout: number }) {
  const data = jsonArg(o.data, "--data") ?? {};
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    throw new UsageError("--data must be a JSON object");
  }
  const r = await ctx.client.executions.resume(id, data as Record<string, unknown>);
  if (!o.wait) {
    ctx.out.write(ctx.out.json ? `${JSON.stringify(r)}\n` : `${r.execution_id} ${r.status}\n`);
    return 0;
  }
  return followAndReport(ctx, id, o.timeout * 1000);
}
