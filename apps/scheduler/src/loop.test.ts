import { createLogger } from "@spool/shared";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type NextTickIn, startLoop } from "./loop.js";

const logger = createLogger("loop-test", "silent");

/** A loop whose ticks are recorded (fake time since the test began) and answer `next()`. */
function recordedLoop(o: { intervalMs: number; minGapMs?: number; next?: () => NextTickIn }) {
  const t0 = Date.now();
  const ticks: number[] = [];
  const loop = startLoop({
    name: "test",
    intervalMs: o.intervalMs,
    minGapMs: o.minGapMs,
    logger,
    tick: async () => {
      ticks.push(Date.now() - t0);
      return o.next?.();
    },
  });
  return { loop, ticks };
}

describe("the scheduler's loop", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("ticks when the tick says something falls due, and every interval when it knows nothing", async () => {
    const dues: NextTickIn[] = [300, undefined, 50_000, 1_200];
    const { loop, ticks } = recordedLoop({ intervalMs: 10_000, next: () => dues.shift() });
    await vi.advanceTimersByTimeAsync(25_000);
    await loop.stop();
    // 0, then 300 ms later, then a whole interval, then at most an interval (not 50 s), then 1.2 s.
    expect(ticks).toEqual([0, 300, 10_300, 20_300, 21_500]);
  });

  it("ticks soon after a wake-up, never sooner than the least gap, once for many wake-ups", async () => {
    const { loop, ticks } = recordedLoop({ intervalMs: 60_000, minGapMs: 200 });
    await vi.advanceTimersByTimeAsync(50);
    for (let i = 0; i < 10; i++) loop.wake();
    await vi.advanceTimersByTimeAsync(1_000);
    loop.wake();
    await vi.advanceTimersByTimeAsync(10);
    await loop.stop();
    expect(ticks).toEqual([0, 200, 1_050]);
  });

  it("ticks again after a wake-up that came while it was ticking", async () => {
    let release: () => void = () => {};
    const t0 = Date.now();
    const ticks: number[] = [];
    const loop = startLoop({
      name: "test",
      intervalMs: 60_000,
      minGapMs: 100,
      logger,
      tick: async () => {
        ticks.push(Date.now() - t0);
        if (ticks.length === 1) await new Promise<void>((r) => (release = r));
      },
    });
    loop.wake(); // during the first tick, which has read what it needed already
    await vi.advanceTimersByTimeAsync(500);
    release();
    await vi.advanceTimersByTimeAsync(10);
    await loop.stop();
    expect(ticks).toEqual([0, 500]);
  });

  it("waits the least gap when something is overdue, and goes on after a failing tick", async () => {
    let n = 0;
    const t0 = Date.now();
    const ticks: number[] = [];
    const loop = startLoop({
      name: "test",
      intervalMs: 5_000,
      minGapMs: 200,
      logger,
      tick: async () => {
        ticks.push(Date.now() - t0);
        if (++n === 3) throw new Error("Postgres went away");
        return -1_000;
      },
    });
    await vi.advanceTimersByTimeAsync(5_500);
    await loop.stop();
    // Overdue: every 200 ms, not in a spin; the failed tick waits an interval.
    expect(ticks).toEqual([0, 200, 400, 5_400]);
  });

  it("ticks no more once stopped", async () => {
    const { loop, ticks } = recordedLoop({ intervalMs: 100, minGapMs: 10 });
    await vi.advanceTimersByTimeAsync(250);
    await loop.stop();
    loop.wake();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(ticks).toEqual([0, 100, 200]);
  });
});
