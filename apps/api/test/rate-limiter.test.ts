// The per-key rate limit holds across API processes (two limiters over the same Redis here), with
// each process counting locally between syncs.
import { randomUUID } from "node:crypto";
import { createLogger } from "@spool/shared";
import { Redis } from "ioredis";
import { afterAll, describe, expect, inject, it } from "vitest";
import { RateLimiter } from "../src/limits/rate-limiter.js";

const redis = new Redis(inject("redisUrl"));
afterAll(() => redis.disconnect());
const logger = createLogger("rate-limit-test", "silent");
// A fixed instant at the start of a second, so every take below falls in one window.
const second = Math.floor(Date.now() / 1000) * 1000 + 1000;

describe("the per-key rate limit", () => {
  it("refuses a key past its limit within one process, with the seconds to wait; other keys go on", () => {
    const limiter = new RateLimiter(redis, logger, { perSecond: 5, syncEveryMs: 60_000 });
    try {
      const key = randomUUID();
      const taken = Array.from({ length: 7 }, () => limiter.take(key, second + 10));
      expect(taken).toEqual([0, 0, 0, 0, 0, 1, 1]);
      expect(limiter.take(randomUUID(), second + 20)).toBe(0);
      // The next second admits it again.
      expect(limiter.take(key, second + 1000)).toBe(0);
    } finally {
      limiter.close();
    }
  });

  it("adds up what every process admitted: past the limit together, each refuses the key", async () => {
    const a = new RateLimiter(redis, logger, { perSecond: 10, syncEveryMs: 60_000 });
    const b = new RateLimiter(redis, logger, { perSecond: 10, syncEveryMs: 60_000 });
    try {
      const key = randomUUID();
      for (let i = 0; i < 6; i++) {
        expect(a.take(key, second + 100)).toBe(0);
        expect(b.take(key, second + 100)).toBe(0);
      }
      await a.sync(second + 150);
      await b.sync(second + 150);
      // a learns b's admissions at its next sync.
      await a.sync(second + 160);
      expect(a.take(key, second + 200)).toBeGreaterThan(0);
      expect(b.take(key, second + 200)).toBeGreaterThan(0);
      expect(Number(await redis.get(`spool:rate:${key}:${second / 1000}`))).toBe(12);
    } finally {
      a.close();
      b.close();
    }
  });

  it("limits nothing when the limit is 0", () => {
    const limiter = new RateLimiter(redis, logger, { perSecond: 0 });
    const key = randomUUID();
    expect(Array.from({ length: 100 }, () => limiter.take(key)).every((s) => s === 0)).toBe(true);
    limiter.close();
  });
});
