// The sweep that gives queued runs back the job Redis lost: through a backlog a batch at a time,
// enqueueing only the jobs that are gone, writing nothing; and never in the way of the other sweeps
// while Redis is away.
import { createLogger } from "@spool/shared";
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { Engine } from "../src/engine.js";
import { createTestEngine, overdueRun } from "./engine-fixture.js";

describe("requeueLostJobs", () => {
  it("goes through a backlog a batch per sweep, enqueues only the lost jobs again, and touches no row", async () => {
    const { engine, prisma, projectId } = await createTestEngine();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push(
        (await engine.executions.run(projectId, { workflowId: "wf", input: { i } })).receipt.execution_id,
      );
    const queue = engine.dispatcher.queue(projectId, "default");
    // Redis lost the jobs of the oldest and the newest run (a flush, an eviction).
    for (const id of [ids[0], ids[4]]) await queue.remove(`${id}.0`);
    const before = await prisma.execution.findMany({ where: { id: { in: ids } }, orderBy: { id: "asc" } });

    const sweep = () => engine.sweeps.requeueLostJobs({ queuedGraceMs: -1000, batchSize: 2 });
    // Batches of two in queued order: [0, 1], [2, 3], [4], then from the oldest again.
    expect([await sweep(), await sweep(), await sweep(), await sweep()]).toEqual([1, 0, 1, 0]);

    for (const id of ids)
      expect(await engine.dispatcher.jobState(projectId, "default", `${id}.0`)).toBe("waiting");
    const after = await prisma.execution.findMany({ where: { id: { in: ids } }, orderBy: { id: "asc" } });
    expect(after).toEqual(before);
  });

  it("with Redis away, the sweeps that need only Postgres still run", async () => {
    const env = await createTestEngine();
    const { engine: live, prisma } = env;
    const id = await overdueRun(env);
    // A scheduler whose Redis is unreachable (nothing listens on port 1).
    const redis = new Redis({
      port: 1,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
    });
    redis.on("error", () => {});
    const cut = new Engine({
      prisma,
      pool: live.pool,
      redis,
      redisUrl: "redis://127.0.0.1:1",
      logger: createLogger("requeue-test", "silent"),
    });
    try {
      const report = await cut.sweeps.runAll({ queuedGraceMs: -1000 });
      expect(report).toMatchObject({ requeued: 0, timedOut: 1 });
      const run = await prisma.execution.findUniqueOrThrow({ where: { id } });
      expect(run.status).toBe("failed");
    } finally {
      await cut.close();
      redis.disconnect();
    }
  });
});
