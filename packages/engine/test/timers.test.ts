import { describe, expect, it } from "vitest";
import { claimOf } from "../src/execution/claim.js";
import { createTestEngine, startedRun } from "./engine-fixture.js";

describe("durable timers", () => {
  it("a timer job that fires early re-arms itself for the rest of the time instead of waiting for a sweep", async () => {
    const { engine, prisma, projectId } = await createTestEngine();
    const { receipt } = await engine.executions.run(projectId, { workflowId: "wf", input: {} });
    const id = receipt.execution_id;
    const started = await startedRun(engine, id, 0, null);
    const wakeAt = new Date(Date.now() + 60_000);
    await engine.executions.block({
      executionId: id,
      claim: claimOf(started!),
      waits: [{ stepKey: "nap", seq: 1, kind: "sleep", wakeAt }],
    });
    const wait = await prisma.wait.findFirstOrThrow({ where: { executionId: id } });

    expect(await engine.executions.fireTimer(wait.id)).toBe(false); // a minute early

    const delayed = await engine.dispatcher.queue(projectId, "default").getJobs(["delayed"]);
    const timers = delayed.filter((j) => j.data.kind === "timer" && j.data.waitId === wait.id);
    const ids = timers.map((j) => j.id);
    expect(ids).toHaveLength(2);
    expect(ids).toContain(`timer.${wait.id}`);
    const rearmed = timers.find((j) => j.id !== `timer.${wait.id}`)!;
    expect(rearmed.timestamp + rearmed.delay).toBeGreaterThanOrEqual(wakeAt.getTime() - 1000);
    expect((await prisma.wait.findUniqueOrThrow({ where: { id: wait.id } })).status).toBe("pending");
  });
});
