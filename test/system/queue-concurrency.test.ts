import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { overlapOf } from "../fixtures/side-effects.js";
import { type System, startSystem } from "./harness.js";

describe("queue concurrency limit across worker processes", () => {
  let sys: System;
  beforeAll(async () => {
    sys = await startSystem();
    // Each process would run 8 at once; only the queue's limit of 2 holds them back. No worker dies
    // here: a lock of 30 s (not the harness's 2 s, made for crash tests) keeps a busy machine's late
    // lock renewal from handing a run to the other worker, which would run its step again.
    const env = { SPOOL_WORKER_CONCURRENCY: "8", SPOOL_JOB_LOCK_MS: "30000" };
    await Promise.all([sys.startWorker(env), sys.startWorker(env)]);
  });
  afterAll(() => sys?.stop());

  it("never runs more than 2 executions of a limit-2 queue at once, across 2 workers, under 20 runs", async () => {
    const { executions } = await sys.client.runBatch(
      Array.from({ length: 20 }, () => ({ workflow: "limited", input: {} })),
    );
    const ids = executions.map((e) => e.execution_id);
    for (const id of ids)
      expect((await sys.client.executions.waitForResult(id, { timeoutMs: 60_000 })).status).toBe("completed");

    // Each run recorded when its work started and ended; the timeline's peak overlap.
    const { peak, starts } = await overlapOf(ids);
    expect(starts).toBe(20);
    // The guarantee is the ceiling; without the limit this peak reaches 16 (2 workers x 8 slots).
    expect(peak).toBeLessThanOrEqual(2);
    expect(peak).toBeGreaterThanOrEqual(1);
  });

  it("a limit of 1 per concurrency key: one 'a' and one 'b' run at once, never two 'a'", async () => {
    const keys = ["a", "a", "a", "a", "b", "b", "b", "b"];
    const { executions } = await sys.client.runBatch(
      keys.map((concurrencyKey) => ({ workflow: "keyed", input: {}, concurrencyKey })),
    );
    const ids = executions.map((e) => e.execution_id);
    for (const id of ids)
      expect((await sys.client.executions.waitForResult(id, { timeoutMs: 60_000 })).status).toBe("completed");

    const { peak, byKey, starts } = await overlapOf(ids);
    expect(starts).toBe(8);
    expect(byKey).toEqual({ a: 1, b: 1 });
    // The partitions are apart: an 'a' and a 'b' did run at the same time.
    expect(peak).toBe(2);
  });
});
