import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countOf, overlapOf } from "../fixtures/side-effects.js";
import { eventually, type Proc, type System, startRedis, startSystem } from "./harness.js";

describe("Redis outage: nothing accepted is lost", () => {
  let sys: System;
  let worker: Proc;
  let redis: Awaited<ReturnType<typeof startRedis>>;
  beforeAll(async () => {
    redis = await startRedis();
    sys = await startSystem({ redisUrl: redis.url });
    worker = await sys.startWorker();
    await sys.startScheduler();
  });
  afterAll(async () => {
    await sys?.stop();
    await redis?.stop();
  });

  it("a run accepted while Redis is down completes once Redis is back (empty)", async () => {
    await redis.stop();
    let accepted: { execution_id: string; whileDown: string };
    try {
      // The API has seen Redis go (its connection closed), as it would before any later request.
      await eventually(async () => (sys.engine.dispatcher.reachable() ? undefined : true));
      const { execution_id } = await sys.client.run("three-steps", { n: 1 });
      accepted = { execution_id, whileDown: (await sys.client.executions.get(execution_id)).status };
    } finally {
      // Back whatever happened, so that a failure here leaves the next tests a Redis.
      redis = await startRedis(redis.port); // no persistence: every job is gone
    }
    const { execution_id, whileDown } = accepted;
    // Not started on any worker process while Redis was away: it waited in Postgres.
    expect(whileDown).toBe("queued");
    const done = await sys.client.executions.waitForResult(execution_id, { timeoutMs: 45_000 });
    expect(done.status).toBe("completed");
    expect(done.result).toEqual({ a: 2, b: 4, c: "n=1 -> 4" });
  });

  it("a run parked on a timer survives Redis losing the timer job", async () => {
    const { execution_id } = await sys.client.run("sleeper", { ms: 1500 });
    await eventually(async () =>
      (await sys.client.executions.get(execution_id)).status === "waiting" ? true : undefined,
    );
    await redis.stop();
    redis = await startRedis(redis.port);
    const done = await sys.client.executions.waitForResult(execution_id, { timeoutMs: 45_000 });
    expect(done.status).toBe("completed");
    expect((done.result as { sleptMs: number }).sleptMs).toBeGreaterThanOrEqual(1500);
  });

  it("a queue's concurrency limit holds right after a flush: it is counted in Postgres", async () => {
    const probe = new Redis(redis.url);
    try {
      await probe.flushall();
    } finally {
      probe.disconnect();
    }
    const { executions } = await sys.client.runBatch(
      Array.from({ length: 8 }, () => ({ workflow: "limited", input: {} })),
    );
    const ids = executions.map((e) => e.execution_id);
    for (const id of ids)
      expect((await sys.client.executions.waitForResult(id, { timeoutMs: 60_000 })).status).toBe("completed");
    const { peak } = await overlapOf(ids);
    expect(peak).toBeLessThanOrEqual(2);
  });

  it("a run accepted and running when Redis dies (and comes back empty) completes, each step once", async () => {
    const { execution_id } = await sys.client.run("slow-middle", {});
    await eventually(async () => ((await countOf(execution_id, "slow-start")) === 1 ? true : undefined));
    const before = new Set(worker.lines);
    await redis.stop();
    // Back only once the worker running the step has seen Redis gone (its connection errors).
    await worker.waitFor((l) => !before.has(l) && /connection error/.test(String(l.msg)));
    redis = await startRedis(redis.port);
    const done = await sys.client.executions.waitForResult(execution_id, { timeoutMs: 45_000 });
    expect(done).toMatchObject({ status: "completed", result: "done" });
    for (const label of ["first", "slow-start", "last"]) expect(await countOf(execution_id, label)).toBe(1);
  });
});
