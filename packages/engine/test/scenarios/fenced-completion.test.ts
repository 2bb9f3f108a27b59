// A worker that ran every step of its job completes the run in one statement that also writes the
// run's spans. When the run is no longer its own, that statement must write nothing: no completed
// run, and no span claiming it completed.
import { describe, expect, it } from "vitest";
import { claimOf } from "../../src/execution/claim.js";
import { spanIdOf } from "../../src/traces/span-ids.js";
import { createTestEngine, startedRun } from "../engine-fixture.js";

describe("the one-statement completion of a fenced worker", () => {
  it("writes neither the run nor its spans; the current worker's completion writes both", async () => {
    const { engine, prisma, projectId } = await createTestEngine();
    const { receipt } = await engine.executions.run(projectId, { workflowId: "wf", input: {} });
    const id = receipt.execution_id;
    const firstRow = (await startedRun(engine, id, 0, null))!;
    // The job is redelivered and started again: the first worker is fenced off.
    const secondRow = (await startedRun(engine, id, 0, null))!;
    const record = (by: string) => ({
      stepKey: "a",
      kind: "run" as const,
      status: "completed" as const,
      attempts: 1,
      startedAt: new Date(),
      endedAt: new Date(),
      output: by,
    });

    const refused = await engine.executions.complete(id, claimOf(firstRow), "first", {
      fresh: { started: firstRow, steps: [record("first")], ran: ["a"] },
    });
    expect(refused).toBeNull();
    expect((await prisma.execution.findUniqueOrThrow({ where: { id } })).status).toBe("running");
    const ownSpan = await prisma.span.findUnique({ where: { spanId: spanIdOf(id) } });
    expect(ownSpan?.status ?? null).not.toBe("completed");

    const done = await engine.executions.complete(id, claimOf(secondRow), "second", {
      fresh: { started: secondRow, steps: [record("second")], ran: ["a"] },
    });
    expect(done?.status).toBe("completed");
    const spans = await prisma.span.findMany({ where: { executionId: id }, orderBy: { name: "asc" } });
    expect(spans.map((s) => [s.name, s.status, s.output])).toEqual([
      ["a", "completed", "second"],
      ["wf", "completed", "second"],
    ]);
  });
});
