// A run's last step result is held back and stored with its completion (one round trip less per
// run). These check what that must not change: first write wins, a worker that lost the run stores
// nothing over what another stored, and a workflow never completes with a value that is not the
// stored one.
import { createLogger, WORKFLOW_BRAND, type WorkflowContext, type WorkflowDefinition } from "@spool/shared";
import { describe, expect, it } from "vitest";
import { claimOf } from "../../src/execution/claim.js";
import { storeStep } from "../../src/execution/journal-store.js";
import { createPostgresHost } from "../../src/in-cluster/postgres-host.js";
import { processRun } from "../../src/runner/process-run.js";
import { ExecutionAbortedError } from "../../src/runtime/journal.js";
import { createTestEngine, startedRun } from "../engine-fixture.js";

const logger = createLogger("held-last-step-test", "silent");

function workflow(handler: (ctx: WorkflowContext<unknown>) => Promise<unknown>): WorkflowDefinition {
  return { [WORKFLOW_BRAND]: true, kind: "workflow", id: "wf", options: { id: "wf" }, handler };
}

async function runJob(
  env: Awaited<ReturnType<typeof createTestEngine>>,
  definition: WorkflowDefinition,
  executionId: string,
) {
  const host = createPostgresHost(
    env.engine,
    { kind: "run", projectId: env.projectId, executionId, dispatchSeq: 0 },
    { workerId: () => null, logger },
  );
  return processRun({ host, workflows: new Map([["wf", definition]]), logger });
}

const stepsOf = async (env: Awaited<ReturnType<typeof createTestEngine>>, executionId: string) =>
  (await env.prisma.stepResult.findMany({ where: { executionId }, orderBy: { seq: "asc" } })).map((s) => [
    s.stepKey,
    s.output,
  ]);

describe("the last step, stored with the completion", () => {
  it("a fresh run ends with every step stored, its result and each step's span", async () => {
    const env = await createTestEngine();
    const { receipt } = await env.engine.executions.run(env.projectId, { workflowId: "wf", input: {} });
    const id = receipt.execution_id;
    const wf = workflow(async (ctx) => {
      const a = await ctx.step.run("a", () => 1);
      const b = await ctx.step.run("b", () => a + 1);
      const c = await ctx.step.run("c", () => b + 1);
      return { c };
    });

    expect(await runJob(env, wf, id)).toBe("completed");
    expect(await stepsOf(env, id)).toEqual([
      ["a", 1],
      ["b", 2],
      ["c", 3],
    ]);
    const run = await env.prisma.execution.findUniqueOrThrow({ where: { id } });
    expect([run.status, run.result]).toEqual(["completed", { c: 3 }]);
    // Stored by the completion's own statement: the step's completed_at is the run's.
    const c = await env.prisma.stepResult.findFirstOrThrow({ where: { executionId: id, stepKey: "c" } });
    expect(c.completedAt?.getTime()).toBe(run.completedAt?.getTime());
    const spans = await env.prisma.span.findMany({ where: { executionId: id, spanType: "step" } });
    expect(spans.map((s) => [s.name, s.status]).sort()).toEqual([
      ["a", "completed"],
      ["b", "completed"],
      ["c", "completed"],
    ]);
  });

  it("when another worker stored the last step first, the run is replayed and completes with the stored result", async () => {
    const env = await createTestEngine();
    const { receipt } = await env.engine.executions.run(env.projectId, { workflowId: "wf", input: {} });
    const id = receipt.execution_id;
    let lastRuns = 0;
    const wf = workflow(async (ctx) => {
      const a = await ctx.step.run("a", () => "a");
      const last = await ctx.step.run("last", async () => {
        lastRuns++;
        // A worker that lost the run but was still running this step stores its result while this
        // one runs it too (a completed result is kept from anyone; that worker is then refused).
        const run = await env.prisma.execution.findUniqueOrThrow({ where: { id } });
        const stale = { dispatchSeq: run.dispatchSeq, lease: run.lease - 1 };
        const theirs = { stepKey: "last", seq: 2, kind: "run" as const, status: "completed" as const };
        await expect(
          storeStep(env.engine.pool, id, stale, {
            ...theirs,
            output: "theirs",
            attempts: 1,
            startedAt: new Date(),
          }),
        ).rejects.toThrow(ExecutionAbortedError);
        return "mine";
      });
      return `${a}+${last}`;
    });

    expect(await runJob(env, wf, id)).toBe("completed");
    expect(lastRuns).toBe(1);
    expect(await stepsOf(env, id)).toEqual([
      ["a", "a"],
      ["last", "theirs"],
    ]);
    const run = await env.prisma.execution.findUniqueOrThrow({ where: { id } });
    expect([run.status, run.result]).toEqual(["completed", "a+theirs"]);
  });

  it("a worker that lost the run stores its held step (first write wins) but does not complete it", async () => {
    const env = await createTestEngine();
    const { receipt } = await env.engine.executions.run(env.projectId, { workflowId: "wf", input: {} });
    const id = receipt.execution_id;
    const first = await startedRun(env.engine, id, 0);
    const second = await startedRun(env.engine, id, 0);
    const held = {
      stepKey: "only",
      seq: 1,
      kind: "run" as const,
      status: "completed" as const,
      output: "from first",
      attempts: 1,
      startedAt: new Date(),
    };
    await expect(
      env.engine.executions.complete(id, claimOf(first!), "first's result", {
        fresh: { started: first!, steps: [], ran: ["only"] },
        lastStep: held,
      }),
    ).rejects.toThrow(ExecutionAbortedError);
    expect(await stepsOf(env, id)).toEqual([["only", "from first"]]);
    const run = await env.prisma.execution.findUniqueOrThrow({ where: { id } });
    expect([run.status, run.lease]).toEqual(["running", second!.lease]);
  });
});
