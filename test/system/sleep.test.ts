import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, type System, startSystem } from "./harness.js";

describe("durable sleep", () => {
  let sys: System;
  beforeAll(async () => {
    sys = await startSystem();
    // One slot only: if the sleeping run held it, nothing else could run.
    await sys.startWorker({ SPOOL_WORKER_CONCURRENCY: "1" });
  });
  afterAll(() => sys?.stop());

  it("a 2 s sleep frees the worker (another run completes meanwhile) and resumes after >= 2 s", async () => {
    const sleeper = await sys.client.run("sleeper", { ms: 2000 });
    // Started once the sleeper is parked on its timer, which is when it lets go of the one slot.
    await eventually(async () =>
      (await sys.client.executions.get(sleeper.execution_id)).status === "waiting" ? true : undefined,
    );
    const quick = await sys.client.run("quick", {});
    const quickDone = await sys.client.executions.waitForResult(quick.execution_id, { timeoutMs: 10_000 });
    expect(quickDone.status).toBe("completed");

    const done = await sys.client.executions.waitForResult(sleeper.execution_id, { timeoutMs: 15_000 });
    expect(done.status).toBe("completed");
    expect((done.result as { sleptMs: number }).sleptMs).toBeGreaterThanOrEqual(2000);
    expect(new Date(quickDone.completed_at!).getTime()).toBeLessThan(new Date(done.completed_at!).getTime());
    const steps = await sys.client.executions.steps(sleeper.execution_id);
    expect(steps.map((s) => `${s.step_key}:${s.kind}`)).toEqual(["start:now", "nap:sleep", "end:now"]);
    // The quick run finished while the sleeper was parked: before its step after the sleep began. (Not
    // "still waiting when quick is seen done", which a slow machine fails: quick had to finish in 2 s.)
    expect(new Date(quickDone.completed_at!).getTime()).toBeLessThan(
      new Date(steps[2]!.started_at!).getTime(),
    );
  });

  it("when a run completes, the waits of its losing branches are closed", async () => {
    const topic = `race-${Date.now()}`;
    const { execution_id } = await sys.client.run("race-event-timer", { topic });
    const done = await sys.client.executions.waitForResult(execution_id, { timeoutMs: 15_000 });
    expect(done.result).toEqual({ winner: "timer" });
    const { rows } = await sys.db.query(
      "SELECT step_key, status FROM waits WHERE execution_id = $1 ORDER BY step_key",
      [execution_id],
    );
    expect(rows).toEqual([
      { step_key: "event", status: "cancelled" },
      { step_key: "timer", status: "resolved" },
    ]);
  });
});
