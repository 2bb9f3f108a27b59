import type { Execution } from "@spool/db";
import { Redis } from "ioredis";
import { describe, expect, inject, it } from "vitest";
import { FinishWatcher } from "../src/execution/finish-watcher.js";

/** A Redis client for a port nothing listens on: announcements never arrive through it. */
function unreachableRedis() {
  const redis = new Redis("redis://127.0.0.1:1", { maxRetriesPerRequest: 1 });
  redis.on("error", () => {});
  return redis;
}

describe("FinishWatcher (the ?wait= long-poll)", () => {
  it("answers when its wait runs out even while Redis is unreachable (Redis only speeds it up)", async () => {
    // As the API connects (retry for ever, so a subscription is queued until Redis returns), to a
    // port nothing listens on.
    const redis = unreachableRedis();
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

  it("wakes its waiters when this process settled the run, without the trip through Redis", async () => {
    // Redis unreachable: only the process's own wake can answer before the wait runs out.
    const redis = unreachableRedis();
    const watcher = new FinishWatcher(redis);
    try {
      // Parked: the waiter (here, one for the run to stop running) reads the run again, as an
      // announcement of a parked run carries no row.
      let reads = 0;
      const parked = watcher.wait(
        "run-a",
        async () => ({ id: "run-a", status: reads++ === 0 ? "running" : "waiting", read: reads }),
        10_000,
        { done: (e) => e.status !== "running", fromAnnounced: (row) => ({ ...row, read: 0 }) },
      );
      await expect.poll(() => reads).toBe(1);
      watcher.wake({ id: "run-a", status: "waiting" } as Execution);
      expect(await parked).toEqual({ id: "run-a", status: "waiting", read: 2 });

      // Finished: the waiter answers with the row it was handed, reading nothing more.
      let finishedReads = 0;
      const finishing = watcher.wait(
        "run-b",
        async () => {
          finishedReads++;
          return { id: "run-b", status: "running" } as Execution;
        },
        10_000,
        { fromAnnounced: (row) => row },
      );
      await expect.poll(() => finishedReads).toBe(1);
      const finished = { id: "run-b", status: "completed", result: { n: 3 } } as unknown as Execution;
      watcher.wake(finished);
      expect(await finishing).toBe(finished);
      expect(finishedReads).toBe(1);
    } finally {
      watcher.close();
      redis.disconnect();
    }
  });
});
