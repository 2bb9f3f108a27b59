import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
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
      const answer = await watcher.wait(async () => ({ status: "running" }), "some-id", 300);
      expect(answer).toEqual({ status: "running" });
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      watcher.close();
      redis.disconnect();
    }
  });
});
