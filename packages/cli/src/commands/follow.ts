import type { Execution, Step } from "@spool/sdk/client";
import { isTerminal } from "@spool/shared";
import type { Ctx } from "../context.js";
import { brief, duration } from "../output.js";

const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/** How a step reads when it is done, or what a pending one waits for. */
function stepLine(s: Step): string {
  const took = duration(s.started_at, s.completed_at);
  if (s.status === "completed") return `✓ ${s.step_key} (${s.kind}${took ? `, ${took}` : ""})`;
  if (s.status === "failed") return `✗ ${s.step_key} (${s.kind}): ${s.error?.message ?? "failed"}`;
  const until = s.wake_at ?? s.expires_at;
  const what = s.topic
    ? `event on '${s.topic}'`
    : s.child_execution_id
      ? `child run ${s.child_execution_id}`
      : s.kind;
  return `… ${s.step_key} waits for ${what}${until ? ` until ${until}` : ""}`;
}

/**
 * Follows a run to its end: each step as it is stored (and each wait as it starts), with a progress
 * line redrawn in place on a terminal. Returns the run as it ended, or as it stood at the timeout.
 */
export async function followRun(ctx: Ctx, id: string, timeoutMs: number): Promise<Execution> {
  const { client, out } = ctx;
  const shown = new Set<string>();
  const started = Date.now();
  let spin = 0;
  let run = await client.executions.get(id);
  for (;;) {
    const steps = await client.executions.steps(id);
    if (out.tty) out.write("\r\x1b[2K");
    for (const s of steps) {
      const key = `${s.step_key}:${s.status}`;
      if (shown.has(key)) continue;
      shown.add(key);
      out.write(`${stepLine(s)}\n`);
    }
    if (isTerminal(run.status) || Date.now() - started >= timeoutMs) return run;
    if (out.tty) {
      const done = steps.filter((s) => s.status === "completed").length;
      const elapsed = ((Date.now() - started) / 1000).toFixed(1);
      out.write(
        `${SPINNER[spin++ % SPINNER.length]} ${run.status} · ${done} step${done === 1 ? "" : "s"} done · ${elapsed} s`,
      );
    }
    // A long poll: answered at once when the run ends, otherwise after a quarter second.
    run = await client.request<Execution>("GET", `/executions/${encodeURIComponent(id)}?wait=0.25`);
  }
}

/**
 * Follows the run (progress for people; nothing but the final JSON with --json), prints how it
 * ended, and returns the exit status: 0 when it completed.
 */
export async function followAndReport(ctx: Ctx, id: string, timeoutMs: number): Promise<number> {
  const silent = ctx.out.json ? { ...ctx, out: { ...ctx.out, write: () => {} } } : ctx;
  const run = await followRun(silent, id, timeoutMs);
  ctx.out.write(ctx.out.json ? `${JSON.stringify(run)}\n` : `${outcomeLine(run)}\n`);
  return run.status === "completed" ? 0 : 1;
}

/** The end of a followed run for a person: its result or error. */
export function outcomeLine(run: Execution): string {
  if (run.status === "completed") return `completed: ${brief(run.result)}`;
  if (run.status === "failed") return `failed: ${run.error?.name ?? "Error"}: ${run.error?.message ?? ""}`;
  return `${run.status}${run.blocked ? ` (${run.blocked.message})` : ""}`;
}
