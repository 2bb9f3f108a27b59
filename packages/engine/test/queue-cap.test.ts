// A project's queues are capped: one key cannot make them (and the sweeps over them) unbounded.
import { isSpoolError } from "@spool/shared";
import { describe, expect, it } from "vitest";
import { createTestEngine } from "./engine-fixture.js";

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => null,
    (err: unknown) =>
      isSpoolError(err) ? { status: err.status, type: err.type, message: err.message } : err,
  );

describe("the queue cap of a project", () => {
  it("refuses queues past the limit, by registration or by a run naming a new lane; nothing is written", async () => {
    const { engine, prisma, projectId } = await createTestEngine({ limits: { maxQueuesPerProject: 3 } });
    await engine.registry.registerQueues(projectId, "d1", [{ name: "a" }, { name: "b" }]);
    // Naming queues it already has costs nothing; a third new one fits.
    await engine.registry.registerQueues(projectId, "d1", [
      { name: "a" },
      { name: "b", concurrencyLimit: 2 },
    ]);
    await engine.registry.registerQueues(projectId, "d1", [{ name: "c" }]);

    const tooMany = await refusal(
      engine.registry.registerQueues(projectId, "d1", [{ name: "a" }, { name: "d" }]),
    );
    expect(tooMany).toMatchObject({ status: 409, type: "CONFLICT" });
    expect((tooMany as { message: string }).message).toContain("limit of 3");

    const before = await prisma.execution.count({ where: { projectId } });
    const byRun = await refusal(
      engine.executions.run(projectId, {
        workflowId: "wf",
        input: {},
        queueName: "e",
        queueConcurrencyLimit: 1,
      }),
    );
    expect(byRun).toMatchObject({ status: 409, type: "CONFLICT" });
    expect(await prisma.execution.count({ where: { projectId } })).toBe(before);
    expect(
      (await prisma.queue.findMany({ where: { projectId }, orderBy: { name: "asc" } })).map((q) => q.name),
    ).toEqual(["a", "b", "c"]);
    // A run on a queue it has, or on its workflow's own, still starts; one naming a new lane is
    // refused too (every lane a run names becomes a queue of the project).
    await engine.executions.run(projectId, {
      workflowId: "wf",
      input: {},
      queueName: "a",
      queueConcurrencyLimit: 1,
    });
    await engine.executions.run(projectId, { workflowId: "wf", input: {} });
    expect(
      await refusal(
        engine.executions.run(projectId, { workflowId: "wf", input: {}, queueName: "elsewhere" }),
      ),
    ).toMatchObject({ status: 409, type: "CONFLICT" });
    expect(await prisma.execution.count({ where: { projectId } })).toBe(before + 2);
  });
});
