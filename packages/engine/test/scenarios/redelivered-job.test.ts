// BullMQ redelivers a job whose lock expired even when its first worker is still alive (a blocked
// event loop, a Redis blip). Both workers then start the same run; the second start's lease must
// fence the first off at its next step, so the two never go on side by side.
import { describe, expect, it } from "vitest";
import { claimOf } from "../../src/execution/claim.js";
import { ExecutionAbortedError } from "../../src/runtime/journal.js";
import { createTestEngine, startedRun } from "../engine-fixture.js";

const step = (stepKey: string, seq: number, output: unknown) => ({
  stepKey,
  seq,
  kind: "run" as const,
  status: "completed" as const,
  output,
  attempts: 1,
  startedAt: new Date(),
});

describe("a job redelivered while its first worker lives on", () => {
  it("the first worker's next step is refused and its transitions do nothing; the second finishes the run", async () => {
    const { engine, prisma, projectId } = await createTestEngine();
    const { receipt } = await engine.executions.run(projectId, { workflowId: "wf", input: {} });
    const id = receipt.execution_id;

    const first = claimOf((await startedRun(engine, id, 0, null))!);
    const firstJournal = await engine.executions.journal(id, first);
    await firstJournal.saveStep(step("a", 1, "from first"));
    // Same job (dispatch 0) started again by another worker.
    const second = claimOf((await startedRun(engine, id, 0, null))!);
    expect(second.dispatchSeq).toBe(first.dispatchSeq);
    expect(second.lease).toBeGreaterThan(first.lease);

    // The first worker's step had already run: its result is kept (first write wins), but the
    // worker is told the run is no longer its own and stops there.
    await expect(firstJournal.saveStep(step("b", 2, "from first"))).rejects.toThrow(ExecutionAbortedError);
    expect(await engine.executions.complete(id, first, "first's result")).toBeNull();
    expect(await engine.executions.release(id, first)).toBeNull();

    const secondJournal = await engine.executions.journal(id, second);
    // What the first worker finished is adopted, not run again.
    expect([...secondJournal.steps.values()].map((s) => [s.stepKey, s.output])).toEqual([
      ["a", "from first"],
      ["b", "from first"],
    ]);
    await secondJournal.saveStep(step("c", 3, "from second"));
    expect((await engine.executions.complete(id, second, "second's result"))?.status).toBe("completed");

    const steps = await prisma.stepResult.findMany({ where: { executionId: id }, orderBy: { seq: "asc" } });
    expect(steps.map((s) => [s.stepKey, s.output])).toEqual([
      ["a", "from first"],
      ["b", "from first"],
      ["c", "from second"],
    ]);
    expect((await prisma.execution.findUniqueOrThrow({ where: { id } })).result).toBe("second's result");
  });
});
