// A SIGKILLed worker's BullMQ jobs stay "active" until their locks expire, and a queue's concurrency
// limit counts them: the queue stalled for a lock's lifetime or more. The scheduler now sees the dead
// worker's Redis connections close and puts its jobs back at once.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countOf } from "../fixtures/side-effects.js";
import { eventually, type System, startSystem } from "./harness.js";

describe("a worker SIGKILLed while it holds a limit-1 queue's only slot", () => {
  let sys: System;
  // Locks that outlive the test: only the scheduler's take-back can free the slot in time.
  const env = { SPOOL_JOB_LOCK_MS: "120000" };

  beforeAll(async () => {
    sys = await startSystem({ ownDatabase: true });
    await sys.startScheduler({ SPOOL_ORPHANED_JOB_GRACE_MS: "2000" });
  });
  afterAll(() => sys?.stop());

  it("frees the slot long before the job's lock expires: the dead worker's run and the next complete", async () => {
    const first = await sys.startWorker(env);
    // "drainable" (queue "solo", limit 1) hangs in its step the first time, returns at once after.
    const held = await sys.client.run("drainable", {});
    await eventually(
      async () => ((await countOf(held.execution_id, "hold-start")) === 1 ? true : undefined),
      30_000,
      "the first run holding the slot",
    );
    const behind = await sys.client.run("drainable", { noHold: true });

    await first.kill("SIGKILL");
    await sys.startWorker(env);

    // Without the take-back, neither finishes before the 120 s lock expires.
    for (const id of [held.execution_id, behind.execution_id]) {
      const done = await sys.client.executions.waitForResult(id, { timeoutMs: 60_000 });
      expect(done.status).toBe("completed");
    }
    expect(await countOf(held.execution_id, "hold-start")).toBe(2);
    expect(await countOf(behind.execution_id, "hold-start")).toBe(1);
    // Which scheduler took the job back is not asserted: test files share one Redis, and another
    // file's scheduler (with a shorter grace) may get there first.
  }, 150_000);
});
