// The sweep that gives queued runs back the job Redis lost (or a consumer ended without moving the run
// on): through a backlog a batch at a time, in passes that end however fast runs come, enqueueing only
// those jobs, writing nothing; and never in the way of the other sweeps while Redis is away.

import { once } from "node:events";
import { createLogger } from "@spool/shared";
import { Worker } from "bullmq";
import { Redis } from "ioredis";
import { describe, expect, inject, it } from "vitest";
import { BULL_PREFIX, bullQueueName, redisOptionsOf } from "../src/dispatch/dispatcher.js";
import { Engine } from "../src/engine.js";
import { createTestEngine, overdueRun } from "./engine-fixture.js";

type Env = Awaited<ReturnType<typeof createTestEngine>>;

/**
 * `n` queued runs, the whole backlog (earlier tests' queued runs are cancelled), queued a second
 * apart a minute ago (their order is theirs, not their ids').
 */
async function backlog(env: Env, n: number): Promise<string[]> {
  await env.prisma.execution.updateMany({ where: { status: "queued" }, data: { status: "cancelled" } });
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const { receipt } = await env.engine.executions.run(env.projectId, { workflowId: "wf", input: { i } });
    await env.prisma.execution.update({
      where: { id: receipt.execution_id },
      data: { updatedAt: new Date(Date.now() - 60_000 + i * 1000) },
    });
    ids.push(receipt.execution_id);
  }
  return ids;
}

const jobOf = (env: Env, id: string) => env.engine.dispatcher.jobState(env.projectId, "default", `${id}.0`);
const loseJob = (env: Env, id: string) =>
  env.engine.dispatcher.queue(env.projectId, "default").remove(`${id}.0`);

describe("requeueLostJobs", () => {
  it("goes through a backlog a batch per sweep, enqueues only the lost jobs again, and touches no row", async () => {
    const env = await createTestEngine();
    const ids = await backlog(env, 5);
    // Redis lost the jobs of the oldest and the newest run (a flush, an eviction).
    for (const id of [ids[0]!, ids[4]!]) await loseJob(env, id);
    const before = await env.prisma.execution.findMany({
      where: { id: { in: ids } },
      orderBy: { id: "asc" },
    });

    const sweep = () => env.engine.sweeps.requeueLostJobs({ queuedGraceMs: 0, batchSize: 2 });
    // Batches of two in queued order: [0, 1], [2, 3], [4].
    expect([await sweep(), await sweep(), await sweep()]).toEqual([1, 0, 1]);
    for (const id of ids) expect(await jobOf(env, id)).toBe("waiting");
    // The next pass starts from the oldest again.
    await loseJob(env, ids[0]!);
    expect(await sweep()).toBe(1);
    expect(await jobOf(env, ids[0]!)).toBe("waiting");

    const after = await env.prisma.execution.findMany({ where: { id: { in: ids } }, orderBy: { id: "asc" } });
    expect(after).toEqual(before);
  });

  it("finds a job lost behind it within a pass, however fast new runs come", async () => {
    const env = await createTestEngine();
    const ids = await backlog(env, 5);
    const sweep = () => env.engine.sweeps.requeueLostJobs({ queuedGraceMs: 0, batchSize: 2 });
    expect(await sweep()).toBe(0); // [0, 1]
    await loseJob(env, ids[0]!);
    // More new runs than a batch's share arrive between sweeps: a pass still ends, and the next
    // one starts from the oldest.
    const requeued: number[] = [];
    for (let i = 0; i < 3; i++) {
      for (let k = 0; k < 2; k++)
        await env.engine.executions.run(env.projectId, { workflowId: "wf", input: {} });
      requeued.push(await sweep());
    }
    expect(requeued).toEqual([0, 0, 1]); // [2, 3], [4], then [0, 1] again
    expect(await jobOf(env, ids[0]!)).toBe("waiting");
  });

  it("gives a queued run whose job ended without moving it on a job again", async () => {
    const env = await createTestEngine();
    const [id] = await backlog(env, 1);
    // A consumer that ends the job and leaves the run as it was (a bug, or a release that did not
    // understand the job): BullMQ keeps the completed job, and an enqueue under its id is a no-op.
    const consumer = new Worker(bullQueueName(env.projectId, "default"), async () => "ended", {
      connection: { ...redisOptionsOf(inject("redisUrl")), maxRetriesPerRequest: null },
      prefix: BULL_PREFIX,
    });
    await once(consumer, "completed");
    await consumer.close();
    expect(await jobOf(env, id!)).toBe("completed");

    expect(await env.engine.sweeps.requeueLostJobs({ queuedGraceMs: 0 })).toBe(1);
    expect(await jobOf(env, id!)).toBe("waiting");
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
