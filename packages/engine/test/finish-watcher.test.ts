import { Redis } from "ioredis";
import { describe, expect, inject, it } from "vitest";
import { FinishWatcher } from "../src/execution/finish-watcher.js";

describe("FinishWatcher (the ?wait= long-poll)", () => {
  it("answers when its wait runs out even while Redis is unreachable (Redis only speeds it up)", async () => {
    // As the API connects (retry for ever, so a subscription is queued until Redis returns), to a
    // port nothing listens on.
    const redis = new Redis("redis://127.0.0.1:1", { maxRetriesPerRequest: 1 });
    redis.on("error", () => {});
    const watcher = new FinishWatcher(redis);
    try {
      const started = Date.now();
      const answer = await watcher.wait("some-id", async () => ({ status: "running" }), 300);
      expect(answer).toEqual({ status: "running" });
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      watcher.close();
      redis.disconnect();
    }
  });

  it("stops at once, reading nothing more, when its caller goes away", async () => {
    const redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: 1 });
    const watcher = new FinishWatcher(redis);
    try {
      const gone = new AbortController();
      let reads = 0;
      const waiting = watcher.wait(
        "some-id",
        async () => {
          reads++;
          if (reads === 1) setImmediate(() => gone.abort());
          return { status: "running" };
        },
        60_000,
        { signal: gone.signal },
      );
      // Resolves on the abort, not after its 60 s wait, and with the one read it made.
      expect(await waiting).toEqual({ status: "running" });
      expect(reads).toBe(1);
      // Already gone before it starts: no wait at all.
      expect(
        await watcher.wait("other-id", async () => ({ status: "queued" }), 60_000, { signal: gone.signal }),
      ).toEqual({ status: "queued" });
    } finally {
      watcher.close();
      redis.disconnect();
    }
  });
});
