import { describe, expect, it } from "vitest";
import { NON_TERMINAL } from "../src/execution/statuses.js";
import { createTestEngine, overdueRun, startedRun } from "./engine-fixture.js";

describe("sweeps", () => {
  it("a push worker silent for 3 heartbeat intervals goes offline and its running execution is requeued", async () => {
    const { engine, prisma, projectId } = await createTestEngine();
    const push = { deploymentId: "d1", mode: "push" as const, pushEndpointUrl: "http://127.0.0.1:9/" };
    const worker = await engine.workers.register(projectId, push);
    const alive = await engine.workers.register(projectId, push);
    const { receipt } = await engine.executions.run(projectId, { workflowId: "wf", input: {} });
    const started = await startedRun(engine, receipt.execution_id, 0, worker.id);
    expect(started?.status).toBe("running");
    const silentFor = (worker.heartbeatIntervalSeconds * 3 + 1) * 1000;
    await prisma.worker.update({
      where: { id: worker.id },
      data: { lastHeartbeatAt: new Date(Date.now() - silentFor) },
    });

    await engine.sweeps.releaseDeadWorkers();

    expect((await prisma.worker.findUniqueOrThrow({ where: { id: worker.id } })).status).toBe("offline");
    expect((await prisma.worker.findUniqueOrThrow({ where: { id: alive.id } })).status).toBe("online");
    const requeued = await prisma.execution.findUniqueOrThrow({ where: { id: receipt.execution_id } });
    expect(requeued).toMatchObject({ status: "queued", dispatchSeq: 1, workerId: null });
    // The dead worker's job (dispatch 0) is now stale: it cannot start the run again.
    expect(await startedRun(engine, receipt.execution_id, 0, worker.id)).toBeNull();
    expect((await startedRun(engine, receipt.execution_id, 1, alive.id))?.workerId).toBe(alive.id);
  });

  it("an in-cluster worker whose heartbeats stop goes offline but keeps its runs: its job locks say whether it lives", async () => {
    const { engine, prisma, projectId } = await createTestEngine();
    const worker = await engine.workers.register(projectId, { deploymentId: "d1", mode: "queue" });
    const { receipt } = await engine.executions.run(projectId, { workflowId: "wf", input: {} });
    await startedRun(engine, receipt.execution_id, 0, worker.id);
    await prisma.worker.update({
      where: { id: worker.id },
      data: { lastHeartbeatAt: new Date(Date.now() - (worker.heartbeatIntervalSeconds * 3 + 1) * 1000) },
    });

    expect(await engine.sweeps.releaseDeadWorkers()).toEqual({ offline: 1, released: 0 });
    const still = await prisma.execution.findUniqueOrThrow({ where: { id: receipt.execution_id } });
    expect(still).toMatchObject({ status: "running", dispatchSeq: 0, workerId: worker.id });
  });

  it("a push worker is judged by the heartbeat interval it keeps: 30 s unless it says otherwise", async () => {
    const { engine, prisma, projectId } = await createTestEngine();
    const url = "http://127.0.0.1:9/";
    const polos = await engine.workers.register(projectId, {
      deploymentId: "d2",
      mode: "push",
      pushEndpointUrl: url,
    });
    const quick = await engine.workers.register(projectId, {
      deploymentId: "d2",
      mode: "push",
      pushEndpointUrl: url,
      heartbeatIntervalSeconds: 2,
    });
    expect([polos.heartbeatIntervalSeconds, quick.heartbeatIntervalSeconds]).toEqual([30, 2]);
    const silentFor = async (id: string, seconds: number) => {
      await prisma.worker.update({
        where: { id },
        data: { lastHeartbeatAt: new Date(Date.now() - seconds * 1000) },
      });
      await engine.sweeps.releaseDeadWorkers();
      return (await prisma.worker.findUniqueOrThrow({ where: { id } })).status;
    };
    // Offline only after 90 s without a heartbeat (3 of the Polos SDK's 30 s beats)...
    expect(await silentFor(polos.id, 89)).toBe("online");
    expect(await silentFor(polos.id, 91)).toBe("offline");
    // ... or after 3 of the beats a worker promised.
    expect(await silentFor(quick.id, 7)).toBe("offline");
    expect(polos.pushSecret).toMatch(/^[\w-]{43}$/);
    // Registering created the deployment it names.
    expect((await engine.registry.getDeployment(projectId, "d2")).deploymentId).toBe("d2");
    await expect(
      engine.workers.register(projectId, { deploymentId: "d2", mode: "push" }),
    ).rejects.toMatchObject({
      status: 400,
    });
  });

  it("a run past its run_timeout_seconds fails with a clear error", async () => {
    const env = await createTestEngine();
    const { engine, prisma } = env;
    const id = await overdueRun(env);
    await engine.sweeps.timeOutRuns();
    const failed = await prisma.execution.findUniqueOrThrow({ where: { id } });
    expect(failed.status).toBe("failed");
    expect(failed.error).toMatchObject({
      name: "RunTimeoutError",
      message: "run exceeded its run_timeout_seconds (5s)",
    });
  });

  it("the index the timeout sweep reads holds the runs of every status a run can still time out in, and only those", async () => {
    const { prisma } = await createTestEngine();
    const [index] = await prisma.$queryRaw<{ def: string }[]>`
      SELECT pg_get_indexdef('executions_open_deadline_idx'::regclass) AS def`;
    const statuses = [...(index?.def.match(/'(\w+)'::text/g) ?? [])].map((m) =>
      m.slice(1, m.indexOf("'", 1)),
    );
    expect(statuses.sort()).toEqual([...NON_TERMINAL].sort());
  });

  it("a running execution whose job vanished from BullMQ is released; one with a live job is left alone", async () => {
    const { engine, prisma, projectId } = await createTestEngine();
    const stranded = (await engine.executions.run(projectId, { workflowId: "wf", input: {} })).receipt;
    const healthy = (await engine.executions.run(projectId, { workflowId: "wf", input: {} })).receipt;
    for (const id of [stranded.execution_id, healthy.execution_id]) await startedRun(engine, id, 0, null);
    // The processor gave up on the first (its job is gone); the second's job is still in Redis.
    await engine.dispatcher.queue(projectId, "default").remove(`${stranded.execution_id}.0`);
    const old = new Date(Date.now() - 5 * 60_000);
    await prisma.execution.updateMany({ where: { projectId }, data: { updatedAt: old } });

    expect(await engine.sweeps.releaseStrandedRuns()).toBeGreaterThanOrEqual(1);
    expect(await prisma.execution.findUniqueOrThrow({ where: { id: stranded.execution_id } })).toMatchObject({
      status: "queued",
      dispatchSeq: 1,
    });
    expect((await prisma.execution.findUniqueOrThrow({ where: { id: healthy.execution_id } })).status).toBe(
      "running",
    );
  });

  it("a queue's limit lives in Postgres: a worker that serves the queue without declaring one keeps it", async () => {
    const { engine, projectId } = await createTestEngine();
    await engine.registry.registerQueues(projectId, "d1", [{ name: "emails", concurrencyLimit: 2 }]);
    const [kept] = await engine.registry.registerQueues(projectId, "d1", [{ name: "emails" }]);
    expect(kept?.concurrencyLimit).toBe(2);
    // Nothing of it is in Redis any more: BullMQ's global concurrency is not how it is enforced.
    expect(await engine.dispatcher.queue(projectId, "emails").getGlobalConcurrency()).toBeNull();
  });
});
