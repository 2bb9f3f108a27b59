// A run's queue is a lane: its jobs go to its workflow's queue (which that workflow's workers
// consume), and the lane's limit is a partition limit per concurrency key, counted in Postgres at
// each start. A run that finds its partition full waits for a slot without a job, and the run that
// frees the slot dispatches it.
import { describe, expect, it } from "vitest";
import { runJobId } from "../src/dispatch/dispatcher.js";
import { claimOf } from "../src/execution/claim.js";
import { createTestEngine } from "./engine-fixture.js";

type Engine = Awaited<ReturnType<typeof createTestEngine>>["engine"];

const start = async (engine: Engine, id: string, dispatchSeq: number) =>
  engine.executions.start(id, dispatchSeq, null);

describe("lanes", () => {
  it("a run on a lane no worker declared is dispatched to its workflow's queue", async () => {
    const { engine, prisma, projectId } = await createTestEngine();
    const { receipt } = await engine.executions.run(projectId, {
      workflowId: "wf",
      input: {},
      queueName: "reports",
    });
    const row = await prisma.execution.findUniqueOrThrow({ where: { id: receipt.execution_id } });
    expect(row).toMatchObject({ queueName: "reports", dispatchQueue: "default" });
    expect(await engine.dispatcher.jobState(projectId, "default", runJobId(row.id, 0))).toBe("waiting");
    // The lane a run named is a queue of the project now (listed, and may be given a limit).
    expect(
      await prisma.queue.findUnique({ where: { projectId_name: { projectId, name: "reports" } } }),
    ).toMatchObject({ concurrencyLimit: null });
  });

  it("limit 1 with keys a and b: one a and one b run at once, never two a; the a that ends hands its slot on", async () => {
    const { engine, prisma, projectId } = await createTestEngine();
    await engine.registry.registerQueues(projectId, "d1", [{ name: "per-user", concurrencyLimit: 1 }]);
    const run = async (key: string) =>
      (
        await engine.executions.run(projectId, {
          workflowId: "wf",
          input: {},
          queueName: "per-user",
          concurrencyKey: key,
        })
      ).receipt.execution_id;
    const [a1, a2, b1] = [await run("a"), await run("a"), await run("b")];

    const first = await start(engine, a1, 0);
    const second = await start(engine, a2, 0);
    const other = await start(engine, b1, 0);
    expect([first.status, second.status, other.status]).toEqual(["started", "slot_wait", "started"]);
    // The waiting run holds no job and says since when it waits.
    const waiting = await prisma.execution.findUniqueOrThrow({ where: { id: a2 } });
    expect(waiting).toMatchObject({ status: "queued", dispatchSeq: 1 });
    expect(waiting.slotWaitingSince).toBeInstanceOf(Date);
    expect(await engine.dispatcher.jobState(projectId, "default", runJobId(a2, 1))).toBe("unknown");

    // a1 completes: its slot goes to a2, whose new job is on its workflow's queue.
    if (first.status !== "started") throw new Error("unreachable");
    await engine.executions.complete(a1, claimOf(first.execution), "done");
    expect(await engine.dispatcher.jobState(projectId, "default", runJobId(a2, 1))).toBe("waiting");
    expect((await prisma.execution.findUniqueOrThrow({ where: { id: a2 } })).slotWaitingSince).toBeNull();
    expect((await start(engine, a2, 1)).status).toBe("started");
  });

  it("a run that waits (here on a timer) holds no slot; woken, it takes one again", async () => {
    const { engine, prisma, projectId } = await createTestEngine();
    await engine.registry.registerQueues(projectId, "d1", [{ name: "solo", concurrencyLimit: 1 }]);
    const run = async () =>
      (await engine.executions.run(projectId, { workflowId: "wf", input: {}, queueName: "solo" })).receipt
        .execution_id;
    const sleeper = await run();
    const started = await start(engine, sleeper, 0);
    if (started.status !== "started") throw new Error(`not started: ${started.status}`);
    await engine.executions.block({
      executionId: sleeper,
      claim: claimOf(started.execution),
      waits: [{ stepKey: "nap", seq: 1, kind: "sleep", wakeAt: new Date(Date.now() + 60_000) }],
    });

    const next = await run();
    expect((await start(engine, next, 0)).status).toBe("started");
    // The sleeper wakes while `next` runs: it waits for the slot, then gets it when `next` ends.
    await prisma.wait.updateMany({
      where: { executionId: sleeper },
      data: { wakeAt: new Date(Date.now() - 1) },
    });
    await engine.sweeps.fireOverdueTimers({ timerGraceMs: 0 });
    const woken = await prisma.execution.findUniqueOrThrow({ where: { id: sleeper } });
    expect((await start(engine, sleeper, woken.dispatchSeq)).status).toBe("slot_wait");
  });

  it("the sweep dispatches waiters a raised limit (or a lost wake-up) leaves with a free slot", async () => {
    const { engine, prisma, projectId } = await createTestEngine();
    await engine.registry.registerQueues(projectId, "d1", [{ name: "narrow", concurrencyLimit: 1 }]);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push(
        (await engine.executions.run(projectId, { workflowId: "wf", input: {}, queueName: "narrow" })).receipt
          .execution_id,
      );
    }
    expect((await Promise.all(ids.map((id) => start(engine, id, 0)))).map((r) => r.status).sort()).toEqual([
      "slot_wait",
      "slot_wait",
      "started",
    ]);
    // Nothing ends, so nobody hands a slot on; the sweep has nothing to do while the lane is full.
    expect((await engine.sweeps.runAll()).slotsHandedOn).toBe(0);

    await engine.registry.registerQueues(projectId, "d1", [{ name: "narrow", concurrencyLimit: 3 }]);
    expect((await engine.sweeps.runAll()).slotsHandedOn).toBe(2);
    const rows = await prisma.execution.findMany({ where: { id: { in: ids }, status: "queued" } });
    for (const r of rows) expect((await start(engine, r.id, r.dispatchSeq)).status).toBe("started");
  });
});
