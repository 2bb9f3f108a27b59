// A run job comes back from BullMQ because the dispatcher that pushed the run died. The run may be
// out on its push worker (then whoever gets the job must only wait: running it again would run its
// steps twice), or the push may never have left (then it must be started again, or it is stuck).
import { describe, expect, it } from "vitest";
import { claimOf } from "../../src/execution/claim.js";
import { markPushed, startOnPushWorker } from "../../src/execution/start-on-push-worker.js";
import { createTestEngine } from "../engine-fixture.js";

describe("a pushed run's job redelivered after its dispatcher died", () => {
  it("is held while the worker took the push, and started again when the push never left", async () => {
    const { engine, prisma, projectId } = await createTestEngine();
    await engine.workers.register(projectId, {
      deploymentId: "d1",
      mode: "push",
      pushEndpointUrl: "http://127.0.0.1:9/",
      capabilities: { workflow_ids: ["wf"] },
    });
    const fresh = async () => {
      const { receipt } = await engine.executions.run(projectId, { workflowId: "wf", input: {} });
      return prisma.execution.findUniqueOrThrow({ where: { id: receipt.execution_id } });
    };

    // Started on the worker, then the dispatcher died before the push went out.
    const lost = await startOnPushWorker(engine, { execution: await fresh() });
    if (lost.status !== "started") throw new Error(`not started: ${lost.status}`);
    const retaken = await engine.executions.start(lost.execution.id, 0, null);
    expect(retaken.status).toBe("started");
    if (retaken.status === "started") expect(retaken.execution.lease).toBe(lost.execution.lease + 1);

    // Started, pushed and taken by the worker, then the dispatcher died.
    const out = await startOnPushWorker(engine, { execution: await fresh() });
    if (out.status !== "started") throw new Error(`not started: ${out.status}`);
    await markPushed(engine.pool, claimOf(out.execution), out.execution.id);
    const again = await engine.executions.start(out.execution.id, 0, null);
    expect(again.status).toBe("held");
    const row = await prisma.execution.findUniqueOrThrow({ where: { id: out.execution.id } });
    expect(row).toMatchObject({ status: "running", lease: out.execution.lease, workerId: out.worker.id });
  });
});
