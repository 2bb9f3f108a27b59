import type { Execution } from "@spool/db";
import { Redis } from "ioredis";
import { describe, expect, inject, it } from "vitest";
import { announceSettled } from "../src/execution/after-finish.js";
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

  describe("a run settled in this process (announceSettled)", () => {
    // Redis unreachable, and neither a re-check of their own nor the end of their waits in the test's
    // time: only the process's own wake can answer the waiters (without it, the test times out).
    const NEVER = 600_000;
    const setup = () => {
      const redis = unreachableRedis();
      const watcher = new FinishWatcher(redis, NEVER);
      return {
        deps: { redis, watcher },
        watcher,
        close: () => {
          watcher.close();
          redis.disconnect();
        },
      };
    };
    /** A read of the run answering `statuses` in turn; `first` resolves at the first read. */
    const reader = (id: string, statuses: string[]) => {
      let reads = 0;
      let firstRead = () => {};
      const first = new Promise<void>((resolve) => {
        firstRead = resolve;
      });
      const read = async () => {
        const status = statuses[Math.min(reads, statuses.length - 1)]!;
        reads++;
        firstRead();
        return { id, status, read: reads } as Execution & { read: number };
      };
      return { read, first, reads: () => reads };
    };

    it("hands a finished row to its waiters here, who answer without reading the run again", async () => {
      const { deps, watcher, close } = setup();
      try {
        const run = reader("run-b", ["running"]);
        const waiting = watcher.wait("run-b", run.read, NEVER, { fromAnnounced: (row) => row });
        await run.first;
        const finished = { id: "run-b", status: "completed", result: { n: 3 } } as unknown as Execution;
        void announceSettled(deps, finished);
        expect(await waiting).toBe(finished);
        expect(run.reads()).toBe(1);
      } finally {
        close();
      }
    }, 10_000);

    it("makes waiters here read a parked run again (its row is not handed over)", async () => {
      const { deps, watcher, close } = setup();
      try {
        // A waiter for the run to stop running, as a push dispatcher's hold is.
        const run = reader("run-a", ["running", "waiting"]);
        const waiting = watcher.wait("run-a", run.read, NEVER, {
          done: (e) => e.status !== "running",
          fromAnnounced: (row) => ({ ...row, read: 0 }),
        });
        await run.first;
        void announceSettled(deps, { id: "run-a", status: "waiting" } as Execution);
        expect(await waiting).toEqual({ id: "run-a", status: "waiting", read: 2 });
      } finally {
        close();
      }
    }, 10_000);
  });
});
