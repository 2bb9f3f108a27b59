// However many queues clients name, a process's dispatcher holds a bounded number of Redis
// connections, and every job still reaches its queue.
import { createLogger } from "@spool/shared";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRedis } from "../../../test/system/harness.js";
import { Dispatcher, redisOptionsOf, runJobId } from "../src/dispatch/dispatcher.js";

describe("the dispatcher's Redis connections", () => {
  let redis: Awaited<ReturnType<typeof startRedis>>;
  let admin: Redis;
  beforeAll(async () => {
    redis = await startRedis();
    admin = new Redis(redis.url);
  });
  afterAll(async () => {
    admin.disconnect();
    await redis.stop();
  });

  const clients = async () =>
    String(await admin.client("LIST"))
      .trim()
      .split("\n").length;

  it("stay bounded over 300 queues, and every job lands in its queue", async () => {
    const dispatcher = new Dispatcher({
      redisUrl: redis.url,
      logger: createLogger("dispatcher-test", "silent"),
      maxOpenQueues: 20,
    });
    try {
      const before = await clients();
      const projectId = "00000000-0000-4000-8000-000000000001";
      const request = (i: number, seq = 0) => ({
        projectId,
        queueName: `q-${i}`,
        jobId: runJobId(`e-${i}`, seq),
        data: { kind: "run" as const, projectId, executionId: `e-${i}`, dispatchSeq: seq },
      });
      for (let i = 0; i < 300; i += 30) {
        const batch = Array.from({ length: 30 }, (_, k) => request(i + k));
        expect(await dispatcher.dispatch(batch)).toBe(30);
      }
      // One shared producer connection, not one per queue.
      expect((await clients()) - before).toBeLessThanOrEqual(1);
      // A queue closed as least recently used opens again on its next use.
      expect(await dispatcher.dispatch([request(0, 1)])).toBe(1);
      for (const i of [0, 150, 299]) {
        expect(await dispatcher.jobState(projectId, `q-${i}`, runJobId(`e-${i}`, 0))).toBe("waiting");
      }
      expect(await dispatcher.jobState(projectId, "q-0", runJobId("e-0", 1))).toBe("waiting");
    } finally {
      await dispatcher.close();
    }
  });
});

describe("redisOptionsOf", () => {
  it("keeps TLS, credentials and the database of a rediss:// URL", () => {
    expect(redisOptionsOf("rediss://user:p%40ss@cache.example.com:6380/2")).toEqual({
      host: "cache.example.com",
      port: 6380,
      username: "user",
      password: "p@ss",
      db: 2,
      tls: { servername: "cache.example.com" },
    });
    expect(redisOptionsOf("redis://127.0.0.1:6379")).toEqual({ host: "127.0.0.1", port: 6379 });
  });
});
