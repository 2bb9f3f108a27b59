// Two API replicas start queued runs on the same push worker at the same moment. Each start counts
// the worker's running runs against its max; one that counted before the other's start committed
// must not take the worker past its max (the worker would answer 429 and be left alone for a while).
import { randomUUID } from "node:crypto";
import { createDatabase } from "@spool/db";
import { afterAll, describe, expect, it } from "vitest";
import {
  createRootRunsOnPushWorkers,
  startOnPushWorker,
  startQueuedOnPushWorkers,
  startQueuedOnPushWorkersWaiting,
} from "../../src/execution/start-on-push-worker.js";
import { createTestEngine } from "../engine-fixture.js";
import { databaseOfThisFile } from "../file-database.js";

type TestEngine = Awaited<ReturnType<typeof createTestEngine>>;

/** Ends runs as far as their workers' slots go: a run that ends frees its slot. */
const endRuns = (prisma: TestEngine["prisma"], ids: string[]) =>
  prisma.execution.updateMany({ where: { id: { in: ids } }, data: { status: "cancelled", workerId: null } });

/** The start that waits, for one job, as a round of one sends it. */
const startWaiting = (pool: Parameters<typeof startQueuedOnPushWorkers>[0], executionId: string) =>
  startQueuedOnPushWorkersWaiting(pool, [{ executionId, dispatchSeq: 0 }])[0];

/** The one-statement start of one job's first try, as a round of one sends it. */
const startQueued = (pool: Parameters<typeof startQueuedOnPushWorkers>[0], executionId: string) =>
  startQueuedOnPushWorkers(pool, [{ executionId, dispatchSeq: 0 }])[0];

/** A push worker of workflow "wf" with room for `max` runs, and a way to queue runs of "wf". */
async function pushWorkerWith({ engine, prisma, projectId }: TestEngine, max: number, port = 9) {
  const worker = await engine.workers.register(projectId, {
    deploymentId: "d1",
    mode: "push",
    pushEndpointUrl: `http://127.0.0.1:${port}/`,
    maxConcurrentExecutions: max,
    capabilities: { workflow_ids: ["wf"] },
  });
  const queued = async (queueName?: string) => {
    const { receipt } = await engine.executions.run(projectId, { workflowId: "wf", input: {}, queueName });
    return prisma.execution.findUniqueOrThrow({ where: { id: receipt.execution_id } });
  };
  return { worker, queued };
}

/** This process's engine and another replica's connections to the same database, and the worker. */
async function twoReplicasAndWorkerWith(max: number) {
  const test = await createTestEngine();
  const other = createDatabase({ databaseUrl: await databaseOfThisFile(), maxConnections: 2 });
  afterAll(async () => {
    await other.prisma.$disconnect();
    await other.pool.end();
  });
  const { worker, queued } = await pushWorkerWith(test, max);
  const running = () => test.prisma.execution.count({ where: { workerId: worker.id, status: "running" } });
  return { ...test, other, worker, queued, running };
}

describe("starts on a push worker from two processes at once", () => {
  it("never take the worker past its max_concurrent_executions", async () => {
    const { engine, prisma, other, queued, running } = await twoReplicasAndWorkerWith(1);

    for (let round = 0; round < 100; round++) {
      const [a, b] = [(await queued()).id, (await queued()).id];
      const started = await Promise.all([startQueued(engine.pool, a), startQueued(other.pool, b)]);
      // One of them takes the one slot; the other finds it taken (or the worker locked) and leaves
      // its run queued for the caller's slower path, which counts again under the worker's lock.
      expect(started.filter(Boolean)).toHaveLength(1);
      expect(await running()).toBe(1);
      // The slot frees for the next round, as a run that ends frees it.
      await endRuns(prisma, [a, b]);
    }
  });

  it("the start that waits for the worker's row takes the room a concurrent start left, and no more", async () => {
    const { engine, prisma, other, queued, running } = await twoReplicasAndWorkerWith(2);

    for (let round = 0; round < 50; round++) {
      // Room for both: the one that finds the worker's row locked waits for it instead of giving up.
      const [a, b] = [(await queued()).id, (await queued()).id];
      const both = await Promise.all([startWaiting(engine.pool, a), startWaiting(other.pool, b)]);
      expect(both.filter(Boolean)).toHaveLength(2);
      expect(await running()).toBe(2);
      // Room for one: the one that waited counts the other's start and leaves its run queued.
      await endRuns(prisma, [a]);
      const [c, d] = [(await queued()).id, (await queued()).id];
      const one = await Promise.all([startWaiting(engine.pool, c), startWaiting(other.pool, d)]);
      expect(one.filter(Boolean)).toHaveLength(1);
      expect(await running()).toBe(2);
      await endRuns(prisma, [b, c, d]);
    }
  });

  it("the start that waits gives up on a row held past its lock timeout, and leaves the run queued", async () => {
    const { engine, prisma, other, worker, queued } = await twoReplicasAndWorkerWith(2);
    const run = await queued();
    // The other replica holds the worker's row in a transaction that outlasts the wait.
    const holder = await other.pool.connect();
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT 1 FROM workers WHERE id = $1 FOR UPDATE", [worker.id]);
      expect(await startWaiting(engine.pool, run.id)).toBeNull();
    } finally {
      await holder.query("ROLLBACK");
      holder.release();
    }
    expect((await prisma.execution.findUniqueOrThrow({ where: { id: run.id } })).status).toBe("queued");
    // Its connection went back to the pool without the lock timeout: a plain wait is not cut short.
    const stillWaits = await engine.pool.connect();
    try {
      expect((await stillWaits.query("SHOW lock_timeout")).rows[0].lock_timeout).toBe("0");
    } finally {
      stillWaits.release();
    }
  });

  it("starts that wait go together behind another replica's start, and take only the room it left", async () => {
    const { engine, prisma, other, worker, queued, running } = await twoReplicasAndWorkerWith(3);
    const held = await queued();
    const ours = [(await queued()).id, (await queued()).id, (await queued()).id];
    // The other replica's start holds the worker's row, its run started but not committed yet.
    const holder = await other.pool.connect();
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT 1 FROM workers WHERE id = $1 FOR UPDATE", [worker.id]);
      await holder.query(
        "UPDATE executions SET status = 'running', worker_id = $2, lease = lease + 1 WHERE id = $1",
        [held.id, worker.id],
      );
      await holder.query("UPDATE workers SET push_starts = push_starts + 1 WHERE id = $1", [worker.id]);
      const waiting = Promise.all(
        startQueuedOnPushWorkersWaiting(
          engine.pool,
          ours.map((executionId) => ({ executionId, dispatchSeq: 0 })),
          "30000ms",
        ),
      );
      const waitingForLock = async () =>
        (
          await prisma.$queryRaw<{ n: number }[]>`
            SELECT count(*)::int AS n FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock'`
        )[0]?.n;
      await expect.poll(waitingForLock).toBe(1);
      await holder.query("COMMIT");
      // Room for three, one taken by the other replica's start: the first two of ours start.
      const started = await waiting;
      expect(started.map((s) => s !== null)).toEqual([true, true, false]);
    } finally {
      await holder.query("ROLLBACK");
      holder.release();
    }
    expect(await running()).toBe(3);
    const pushStarts = (await prisma.worker.findUniqueOrThrow({ where: { id: worker.id } })).pushStarts;
    expect(pushStarts).toBe(3);
  });

  it("waiting rounds of two replicas on two workers never wait for each other: every start goes through", async () => {
    const test = await createTestEngine();
    const { engine, prisma } = test;
    const other = createDatabase({ databaseUrl: await databaseOfThisFile(), maxConnections: 2 });
    try {
      const { queued } = await pushWorkerWith(test, 100);
      await pushWorkerWith(test, 100, 10);
      for (let round = 0; round < 30; round++) {
        const ids = await Promise.all(Array.from({ length: 6 }, async () => (await queued()).id));
        const jobs = ids.map((executionId) => ({ executionId, dispatchSeq: 0 }));
        // A lock timeout far past any commit here: only a deadlock (Postgres breaks it after 1 s)
        // would give a start up.
        const started = await Promise.all([
          ...startQueuedOnPushWorkersWaiting(engine.pool, jobs.slice(0, 3), "5000ms"),
          ...startQueuedOnPushWorkersWaiting(other.pool, jobs.slice(3), "5000ms"),
        ]);
        // Only a round's first statement waits (for whichever worker it chose); the others take
        // the rows their transaction holds or skip the other's: no two rounds wait for each other.
        expect(started.map((s) => s !== null)).toEqual(Array(6).fill(true));
        await endRuns(prisma, ids);
      }
    } finally {
      await other.prisma.$disconnect();
      await other.pool.end();
    }
  });

  it("starts sent together fill the least loaded workers' room and no more, each counting those before it", async () => {
    const test = await createTestEngine();
    const { engine, prisma } = test;
    const { worker: w1, queued } = await pushWorkerWith(test, 3);
    const { worker: w2 } = await pushWorkerWith(test, 3, 10);
    const runs = await Promise.all(Array.from({ length: 8 }, () => queued()));
    const started = await Promise.all(
      startQueuedOnPushWorkers(
        engine.pool,
        runs.map((r) => ({ executionId: r.id, dispatchSeq: 0 })),
      ),
    );
    // Six slots in all, three on each worker: the first six in order start, spread; two stay queued.
    expect(started.map((s) => s !== null)).toEqual([true, true, true, true, true, true, false, false]);
    const on = (w: { id: string }) =>
      prisma.execution.count({ where: { workerId: w.id, status: "running" } });
    expect([await on(w1), await on(w2)]).toEqual([3, 3]);
    expect(started.slice(0, 6).map((s) => s?.execution.status)).toEqual(Array(6).fill("running"));
    const pushStarts = await prisma.worker.findMany({ where: { id: { in: [w1.id, w2.id] } } });
    expect(pushStarts.map((w) => w.pushStarts)).toEqual([3, 3]);
    expect(
      await prisma.execution.count({ where: { id: { in: runs.map((r) => r.id) }, status: "queued" } }),
    ).toBe(2);
  });

  it("every way of starting a run on a push worker moves its push_starts on", async () => {
    const test = await createTestEngine();
    const { engine, prisma, projectId } = test;
    await engine.registry.registerQueues(projectId, "d1", [{ name: "narrow", concurrencyLimit: 5 }]);
    const { worker, queued } = await pushWorkerWith(test, 5);
    const pushStarts = async () =>
      (await prisma.worker.findUniqueOrThrow({ where: { id: worker.id } })).pushStarts;

    // The one-statement start of a job's first try.
    const first = await queued();
    expect(await startQueued(engine.pool, first.id)).not.toBeNull();
    expect(await pushStarts()).toBe(1);
    // The exact path: the worker locked, its runs counted in a statement of their own.
    expect((await startOnPushWorker(engine, { execution: await queued() })).status).toBe("started");
    expect(await pushStarts()).toBe(2);
    // A run of a lane with a limit: its slot counted too, in a transaction.
    expect((await startOnPushWorker(engine, { execution: await queued("narrow") })).status).toBe("started");
    expect(await pushStarts()).toBe(3);
    expect(await prisma.execution.count({ where: { workerId: worker.id, status: "running" } })).toBe(3);
  });
});

describe("new runs inserted already started on a push worker (one statement each)", () => {
  const newRun = (projectId: string) => ({
    projectId,
    request: { workflowId: "wf", input: {} },
    id: randomUUID(),
    pushHolder: "api-1",
  });

  it("from two processes at once, never take the worker past its max_concurrent_executions", async () => {
    const { engine, prisma, other, projectId, running } = await twoReplicasAndWorkerWith(1);

    for (let round = 0; round < 50; round++) {
      const [a, b] = [newRun(projectId), newRun(projectId)];
      const results = await Promise.all([
        createRootRunsOnPushWorkers(engine.pool, [a])[0]!,
        createRootRunsOnPushWorkers(other.pool, [b])[0]!,
      ]);
      // One takes the one slot; the other finds it taken (or the worker locked) and stays queued.
      expect(results.filter((r) => r.started)).toHaveLength(1);
      expect(results.map((r) => r.created.execution.status).sort()).toEqual(["queued", "running"]);
      expect(await running()).toBe(1);
      await endRuns(prisma, [a.id, b.id]);
    }
  });

  it("sent together, fill the least loaded workers' room and no more, each counting those before it", async () => {
    const test = await createTestEngine();
    const { engine, prisma, projectId } = test;
    const { worker: w1 } = await pushWorkerWith(test, 2);
    const { worker: w2 } = await pushWorkerWith(test, 2, 10);
    const runs = Array.from({ length: 5 }, () => newRun(projectId));
    const results = await Promise.all(createRootRunsOnPushWorkers(engine.pool, runs));
    expect(results.map((r) => r.started !== null)).toEqual([true, true, true, true, false]);
    const rows = await prisma.execution.findMany({ where: { id: { in: runs.map((r) => r.id) } } });
    const started = rows.filter((r) => r.status === "running");
    expect(started.map((r) => [r.lease, r.pushHolder])).toEqual(Array(4).fill([1, "api-1"]));
    expect(started.every((r) => r.startedAt !== null)).toBe(true);
    const queued = rows.filter((r) => r.status === "queued");
    expect(queued.map((r) => [r.lease, r.pushHolder, r.workerId])).toEqual([[0, null, null]]);
    const on = (w: { id: string }) =>
      prisma.execution.count({ where: { workerId: w.id, status: "running" } });
    expect([await on(w1), await on(w2)]).toEqual([2, 2]);
    // Each start moved its worker's push_starts on, for concurrent starts to count it.
    const workers = await prisma.worker.findMany({ where: { id: { in: [w1.id, w2.id] } } });
    expect(workers.map((w) => w.pushStarts)).toEqual([2, 2]);
    // The started ones come back with their worker, as a push needs them.
    expect(results.slice(0, 4).map((r) => [w1.id, w2.id].includes(r.started!.worker.id))).toEqual(
      Array(4).fill(true),
    );
  });
});
