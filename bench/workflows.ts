// Workflows the benchmark's worker serves (bench/run.ts points SPOOL_WORKFLOWS_MODULE here).
// They do no work of their own, so what is measured is Spool's overhead per run and per step.
import { defineQueue, defineWorkflow, type WorkflowContext } from "@spool/sdk";

/** Its own queue, without a concurrency limit: the worker's SPOOL_WORKER_CONCURRENCY is the bound. */
export const benchQueue = defineQueue({ name: "bench", concurrencyLimit: null });

/** The worker's wall clock with sub-millisecond resolution (stored timestamps have 1 ms). */
const now = () => performance.timeOrigin + performance.now();

/**
 * Three no-op steps: each one is a stored step result and nothing else (the first two a Postgres
 * commit each; the last is stored by the run's completion statement). Each
 * returns the moment its function ran, so the result holds the worker's own step-to-step gaps: the
 * time from one step's function returning to the next one's starting (storing the result and
 * moving on), measured in the worker rather than from millisecond timestamps.
 */
export async function threeNoOpSteps(ctx: WorkflowContext, input: { i: number }) {
  const one = await ctx.step.run("one", () => ({ n: input.i + 1, at: now() }));
  const two = await ctx.step.run("two", () => ({ n: one.n + 1, at: now() }));
  const three = await ctx.step.run("three", () => ({ n: two.n + 1, at: now() }));
  return { c: three.n, stepsAt: [one.at, two.at, three.at] };
}

export const benchThreeSteps = defineWorkflow({ id: "bench-3-steps", queue: "bench" }, threeNoOpSteps);

/** Consumer of event-trigger batches (the benchmark registers the trigger with batch_size 100). */
export const benchBatch = defineWorkflow(
  { id: "bench-batch", queue: "bench-events" },
  async (ctx, input: { events: { sequence_id: number }[]; trigger_id: string }) =>
    ctx.step.run("count", () => input.events.length),
);
