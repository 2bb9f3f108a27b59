// The workflow `npm run chaos` (bench/chaos.ts) runs while it breaks the system; its worker loads this
// module through SPOOL_WORKFLOWS_MODULE. Each step's function first records that it ran in
// `chaos_effects`, a table the chaos script creates: a function that ran again after its step's result
// was stored shows up there.
import { setTimeout as delay } from "node:timers/promises";
import { defineQueue, defineWorkflow, type StepRunOptions, type WorkflowContext } from "@spool/sdk";
import pg from "pg";

export const CHAOS_WORKFLOW_ID = "chaos-3-steps";

/**
 * One row per call of a step function. `result_stored`: the step's completed result was already
 * committed when the row was written (the INSERT's own snapshot saw it), i.e. the function ran again
 * after its result was stored. `at` is clock_timestamp(), the same clock as step_results.completed_at.
 */
export const CHAOS_EFFECTS_DDL = `
  CREATE TABLE IF NOT EXISTS chaos_effects (
    id            bigserial PRIMARY KEY,
    execution_id  uuid        NOT NULL,
    step_key      text        NOT NULL,
    at            timestamptz NOT NULL DEFAULT clock_timestamp(),
    pid           integer     NOT NULL,
    attempt       integer     NOT NULL,
    result_stored boolean     NOT NULL
  );
  CREATE INDEX IF NOT EXISTS chaos_effects_step ON chaos_effects (execution_id, step_key)`;

// The first statement of every step function, so `at` is when the function started.
const RECORD_EFFECT = `
  INSERT INTO chaos_effects (execution_id, step_key, pid, attempt, result_stored)
  VALUES ($1::uuid, $2, $3, $4, EXISTS (
    SELECT 1 FROM step_results
    WHERE execution_id = $1::uuid AND step_key = $2 AND status = 'completed'))`;

let pool: pg.Pool | undefined;
function effects(): pg.Pool {
  if (!pool) {
    pool = new pg.Pool({
      connectionString: process.env.DATABASE_URL,
      max: 4,
      connectionTimeoutMillis: 5_000,
      idleTimeoutMillis: 10_000,
    });
    // An idle connection that dies with Postgres must not crash the worker; the next query reconnects.
    pool.on("error", () => {});
  }
  return pool;
}

async function recordEffect(ctx: WorkflowContext, stepKey: string): Promise<void> {
  await effects().query(RECORD_EFFECT, [ctx.execution.id, stepKey, process.pid, ctx.execution.attempt]);
}

// While Postgres restarts the effect cannot be written and the step throws; it is retried (that is a
// run before its result was stored, which is allowed) for long enough to outlast the restart.
const RETRY: StepRunOptions = { retries: 12, backoff: { initial: 500, max: 4_000 } };

export const chaosQueue = defineQueue({ name: "chaos", concurrencyLimit: null });

/**
 * Three steps and a durable sleep: `one` records its effect and returns; `two` records its effect,
 * then sleeps 50–200 ms (so a kill often lands mid-step); `nap` is a durable 1 s timer (a BullMQ
 * delayed job, fired from Postgres by the scheduler if Redis loses it); `three` records its effect.
 * The result is `run + 3`, which the chaos script checks.
 */
export const chaosThreeSteps = defineWorkflow(
  { id: CHAOS_WORKFLOW_ID, queue: "chaos" },
  async (ctx, input: { run: number }) => {
    const one = await ctx.step.run(
      "one",
      async () => {
        await recordEffect(ctx, "one");
        return input.run + 1;
      },
      RETRY,
    );
    const two = await ctx.step.run(
      "two",
      async () => {
        await recordEffect(ctx, "two");
        await delay(50 + ((input.run * 37) % 151));
        return one + 1;
      },
      RETRY,
    );
    await ctx.step.sleep("nap", "1s");
    const three = await ctx.step.run(
      "three",
      async () => {
        await recordEffect(ctx, "three");
        return two + 1;
      },
      RETRY,
    );
    return { run: input.run, value: three };
  },
);
