// A run's root decides the trace it joins: a client may only name a root of its own project.
import { isSpoolError } from "@spool/shared";
import { describe, expect, it } from "vitest";
import { createTestEngine } from "./engine-fixture.js";

describe("root_execution_id without a parent", () => {
  it("must be a run of the same project; a root run is otherwise its own root", async () => {
    const { engine, prisma, projectId } = await createTestEngine();
    const other = await engine.projects.create({ name: "other" });
    await engine.registry.registerDeployment(other.id, "d1");
    await engine.registry.registerWorkflows(other.id, "d1", [{ workflowId: "wf", workflowType: "workflow" }]);
    const theirs = (await engine.executions.run(other.id, { workflowId: "wf", input: {} })).receipt
      .execution_id;

    const plain = (await engine.executions.run(projectId, { workflowId: "wf", input: {} })).receipt
      .execution_id;
    expect((await prisma.execution.findUniqueOrThrow({ where: { id: plain } })).rootExecutionId).toBe(plain);

    const before = await prisma.execution.count({ where: { projectId } });
    for (const root of [theirs, "00000000-0000-4000-8000-000000000000", "not-a-uuid"]) {
      const refused = await engine.executions
        .run(projectId, { workflowId: "wf", input: {}, rootExecutionId: root })
        .then(
          () => null,
          (err: unknown) => (isSpoolError(err) ? err.type : err),
        );
      expect(refused, root).toBe("NOT_FOUND");
    }
    expect(await prisma.execution.count({ where: { projectId } })).toBe(before);
    expect(await prisma.execution.count({ where: { rootExecutionId: theirs } })).toBe(1);

    const grouped = (
      await engine.executions.run(projectId, { workflowId: "wf", input: {}, rootExecutionId: plain })
    ).receipt.execution_id;
    expect((await prisma.execution.findUniqueOrThrow({ where: { id: grouped } })).rootExecutionId).toBe(
      plain,
    );
  });
});
