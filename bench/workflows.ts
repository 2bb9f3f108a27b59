// Workflows the benchmark's worker serves (bench/run.ts points SPOOL_WORKFLOWS_MODULE here).
// They do no work of their own, so what is measured is Spool's overhead per run and per step.
import { defineQueue, defineWorkflow } from "@spool/sdk";

/** Its own queue, without a concurrency limit: the worker's SPOOL_WORKER_CONCURRENCY is the bound. */
export const benchQueue = defineQueue({ name: "bench", concurrencyLimit: null });

/** Three no-op steps: each one is a stored step result (one Postgres commit) and nothing else. */
export const benchThreeSteps = defineWorkflow(
  { id: "bench-3-steps", queue: "bench" },
  async (ctx, input: { i: number }) => {
    const a = await ctx.step.run("one", () => input.i + 1);
    const b = await ctx.step.run("two", () => a + 1);
    const c = await ctx.step.run("three", () => b + 1);
    return { c };
  },
);

/** Consumer of event-trigger batches (the benchmark registers the trigger with batch_size 100). */
export const benchBatch = defineWorkflow(
  { id: "bench-batch", queue: "bench-events" },
  async (ctx, input: { events: { sequence_id: number }[]; trigger_id: string }) =>
    ctx.step.run("count", () => input.events.length),
);
