// Step results of concurrent runs are written together (execution/step-writes.ts). Each write must
// keep what storeStep promises on its own: first completed write wins, a fenced worker's completed
// result is kept but the worker is told it lost the run, its failure is not stored at all.
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { claimOf } from "../src/execution/claim.js";
import { StepWrites } from "../src/execution/step-writes.js";
import { ExecutionAbortedError, type NewStepResult } from "../src/runtime/journal.js";
import { StepResultTooLargeError } from "../src/runtime/result-size.js";
import { createTestEngine, startedRun } from "./engine-fixture.js";

const step = (
  stepKey: string,
  output: unknown,
  status: "completed" | "failed" = "completed",
): NewStepResult => ({
  stepKey,
  seq: 1,
  kind: "run",
  status,
  output: status === "completed" ? output : undefined,
  error: status === "failed" ? { name: "Error", message: String(output) } : undefined,
  attempts: 1,
  startedAt: new Date(),
});

describe("step writes of concurrent runs", () => {
  it("written together, each keeps its own outcome", async () => {
    const { engine, prisma, projectId } = await createTestEngine();
    const runs = await Promise.all(
      [0, 1, 2].map(async () => {
        const { receipt } = await engine.executions.run(projectId, { workflowId: "wf", input: {} });
        const started = await startedRun(engine, receipt.execution_id, 0);
        return { id: receipt.execution_id, claim: claimOf(started!) };
      }),
    );
    const [a, b, c] = runs as [(typeof runs)[0], (typeof runs)[0], (typeof runs)[0]];
    const fenced = { ...b.claim, lease: b.claim.lease - 1 };
    // A completed result stored earlier: a later write of that step answers it, not its own.
    await engine.executions.journal(c.id, c.claim).then((j) => j.saveStep(step("done", "first")));

    const writes = new StepWrites(engine.pool);
    // Issued in one tick: the first goes out alone, the rest together when it returns.
    const outcomes = await Promise.allSettled([
      writes.store(a.id, a.claim, step("s1", { n: 1 })),
      writes.store(a.id, a.claim, step("s2", null)),
      writes.store(b.id, b.claim, step("s1", "b's")),
      writes.store(b.id, fenced, step("late", "kept")),
      writes.store(b.id, fenced, step("late-failure", "not kept", "failed")),
      writes.store(c.id, c.claim, step("done", "second")),
      writes.store(c.id, c.claim, step("oops", "boom", "failed")),
      writes.store(a.id, a.claim, step("s1", { n: 2 })),
      writes.store(randomUUID(), a.claim, step("s1", 1)),
    ]);
    const value = (i: number) => {
      const o = outcomes[i]!;
      return o.status === "fulfilled" ? [o.value.stepKey, o.value.status, o.value.output] : o.reason;
    };
    expect(value(0)).toEqual(["s1", "completed", { n: 1 }]);
    expect(value(1)).toEqual(["s2", "completed", null]);
    expect(value(2)).toEqual(["s1", "completed", "b's"]);
    expect(value(3)).toBeInstanceOf(ExecutionAbortedError);
    expect(value(4)).toBeInstanceOf(ExecutionAbortedError);
    expect(value(5)).toEqual(["done", "completed", "first"]);
    expect(value(6)).toEqual(["oops", "failed", null]);
    // The same step written twice: the second write waits for the first, and gets its result.
    expect(value(7)).toEqual(["s1", "completed", { n: 1 }]);
    expect((value(8) as Error).message).toBe("execution is gone");

    const stored = await prisma.stepResult.findMany({
      orderBy: [{ executionId: "asc" }, { stepKey: "asc" }],
    });
    const of = (id: string) =>
      stored.filter((s) => s.executionId === id).map((s) => [s.stepKey, s.status, s.output]);
    expect(of(a.id)).toEqual([
      ["s1", "completed", { n: 1 }],
      ["s2", "completed", null],
    ]);
    // The fenced worker's completed result is kept (the next worker adopts it); its failure is not.
    expect(of(b.id)).toEqual([
      ["late", "completed", "kept"],
      ["s1", "completed", "b's"],
    ]);
    expect(of(c.id)).toEqual([
      ["done", "completed", "first"],
      ["oops", "failed", null],
    ]);
    const error = stored.find((s) => s.executionId === c.id && s.stepKey === "oops")?.error;
    expect(error).toMatchObject({ message: "boom" });
  });

  it("refuses a result over the limit before anything is sent", async () => {
    const { engine, projectId } = await createTestEngine();
    const { receipt } = await engine.executions.run(projectId, { workflowId: "wf", input: {} });
    const claim = claimOf((await startedRun(engine, receipt.execution_id, 0))!);
    const writes = new StepWrites(engine.pool);
    await expect(writes.store(receipt.execution_id, claim, step("big", "x".repeat(100)), 50)).rejects.toThrow(
      StepResultTooLargeError,
    );
    const journal = await engine.executions.journal(receipt.execution_id, claim);
    expect(journal.steps.size).toBe(0);
  });
});
