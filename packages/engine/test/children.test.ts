// A child run started by ctx.step.invoke exists to answer its parent. When the parent finishes
// without it (fails, times out, or completes down another branch), nobody will read its result:
// it is cancelled, as it is when the parent is cancelled.
import { describe, expect, it } from "vitest";
import { claimOf } from "../src/execution/claim.js";
import { createTestEngine, startedRun } from "./engine-fixture.js";

async function parentWaitingOnChild(
  t: Awaited<ReturnType<typeof createTestEngine>>,
  runTimeoutSeconds?: number,
) {
  const { engine, prisma, projectId } = t;
  const { receipt } = await engine.executions.run(projectId, {
    workflowId: "parent",
    input: {},
    runTimeoutSeconds,
  });
  const id = receipt.execution_id;
  const claim = claimOf((await startedRun(engine, id, 0, null))!);
  await engine.executions.block({
    executionId: id,
    claim,
    waits: [
      { stepKey: "sub", seq: 1, kind: "invoke", wakeAt: null, child: { workflowId: "child", input: {} } },
    ],
  });
  const child = await prisma.execution.findFirstOrThrow({ where: { parentExecutionId: id } });
  return { id, childId: child.id };
}

describe("child runs of a finished parent", () => {
  it("a parent failed by its run timeout cancels the child it was waiting for", async () => {
    const t = await createTestEngine({ workflows: ["parent", "child"] });
    const { id, childId } = await parentWaitingOnChild(t, 60);
    await t.prisma.execution.update({ where: { id }, data: { deadlineAt: new Date(Date.now() - 1) } });

    await t.engine.sweeps.timeOutRuns();

    const rows = await t.prisma.execution.findMany({ where: { id: { in: [id, childId] } } });
    expect(Object.fromEntries(rows.map((r) => [r.id, r.status]))).toEqual({
      [id]: "failed",
      [childId]: "cancelled",
    });
  });

  it("a parent that completes down another branch cancels the child still running", async () => {
    const { engine, prisma, projectId } = await createTestEngine({ workflows: ["parent", "child"] });
    const { receipt } = await engine.executions.run(projectId, { workflowId: "parent", input: {} });
    const id = receipt.execution_id;
    // Promise.race([invoke child, sleep]): the run parks on both; the sleep is already due.
    await engine.executions.block({
      executionId: id,
      claim: claimOf((await startedRun(engine, id, 0, null))!),
      waits: [
        { stepKey: "sub", seq: 1, kind: "invoke", wakeAt: null, child: { workflowId: "child", input: {} } },
        { stepKey: "nap", seq: 2, kind: "sleep", wakeAt: new Date(Date.now() - 1) },
      ],
    });
    const childId = (await prisma.execution.findFirstOrThrow({ where: { parentExecutionId: id } })).id;
    const childClaim = claimOf((await startedRun(engine, childId, 0, null))!);
    const nap = await prisma.wait.findFirstOrThrow({ where: { executionId: id, stepKey: "nap" } });
    expect(await engine.executions.fireTimer(nap.id)).toBe(true); // the sleep wins: the parent wakes

    const woken = await startedRun(engine, id, 1, null);
    await engine.executions.complete(id, claimOf(woken!), "the sleep won");

    expect((await prisma.execution.findUniqueOrThrow({ where: { id: childId } })).status).toBe("cancelled");
    // The child's worker is told at its next step.
    const journal = await engine.executions.journal(childId, childClaim);
    await expect(
      journal.saveStep({
        stepKey: "x",
        seq: 1,
        kind: "run",
        status: "completed",
        output: 1,
        attempts: 1,
        startedAt: new Date(),
      }),
    ).rejects.toThrow("execution is cancelled");
  });
});
