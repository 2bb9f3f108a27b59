import { describe, expect, it } from "vitest";
import { createTestEngine } from "./engine-fixture.js";

interface BatchInput {
  events: { sequence_id: number; data: { n: number } }[];
  trigger_id: string;
}

const publish = (
  engine: Awaited<ReturnType<typeof createTestEngine>>["engine"],
  projectId: string,
  topic: string,
  ns: number[],
) =>
  engine.events.publish(
    projectId,
    topic,
    ns.map((n) => ({ data: { n } })),
  );

describe("trigger firing", () => {
  it("fires a backlog batch by batch, each event once and in order, while schedulers race", async () => {
    const { engine, prisma, projectId } = await createTestEngine();
    const { engine: replica } = await createTestEngine();
    const trigger = await engine.triggers.register(projectId, {
      workflowId: "wf",
      deploymentId: "d1",
      eventTopic: "orders",
      batchSize: 3,
    });
    // Five full batches and one event left over (no timeout: it waits for two more).
    const { events } = await publish(
      engine,
      projectId,
      "orders",
      Array.from({ length: 16 }, (_, n) => n),
    );

    const fired = await Promise.all([
      engine.triggerFiring.fire(trigger.id),
      replica.triggerFiring.fireDue(),
      engine.triggerFiring.fireDue(),
    ]);
    expect(fired.reduce((a, b) => a + b, 0)).toBe(5);
    const runs = await prisma.execution.findMany({ where: { projectId } });
    const batches = runs
      .map((r) => (r.input as unknown as BatchInput).events.map((e) => e.data.n))
      .sort((a, b) => a[0]! - b[0]!);
    expect(batches).toEqual([
      [0, 1, 2],
      [3, 4, 5],
      [6, 7, 8],
      [9, 10, 11],
      [12, 13, 14],
    ]);
    const after = await prisma.eventTrigger.findUniqueOrThrow({ where: { id: trigger.id } });
    expect(Number(after.lastSequenceId)).toBe(events[14]!.sequence_id);
  });

  it("pauses a trigger whose workflow is no longer registered; re-registering fires from its cursor", async () => {
    const { engine, prisma, projectId } = await createTestEngine();
    const registration = { workflowId: "wf", deploymentId: "d1", eventTopic: "gone", batchSize: 2 };
    const trigger = await engine.triggers.register(projectId, registration);
    await prisma.workflowRegistration.deleteMany({ where: { projectId, workflowId: "wf" } });
    await publish(engine, projectId, "gone", [1, 2]);

    expect(await engine.triggerFiring.fire(trigger.id)).toBe(0);
    await engine.triggerFiring.fireDue(); // a paused trigger is not picked up
    const paused = await prisma.eventTrigger.findUniqueOrThrow({ where: { id: trigger.id } });
    expect(paused).toMatchObject({ status: "paused", lastSequenceId: trigger.lastSequenceId });
    expect(await prisma.execution.count({ where: { projectId } })).toBe(0);

    await engine.registry.registerWorkflows(projectId, "d1", [
      { workflowId: "wf", workflowType: "workflow" },
    ]);
    expect((await engine.triggers.register(projectId, registration)).status).toBe("active");
    expect(await engine.triggerFiring.fire(trigger.id)).toBe(1);
    const [run] = await prisma.execution.findMany({ where: { projectId } });
    expect((run!.input as unknown as BatchInput).events.map((e) => e.data.n)).toEqual([1, 2]);
  });
});
