import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type System, startSystem } from "./harness.js";

describe("queue concurrency limit across worker processes", () => {
  let sys: System;
  beforeAll(async () => {
    sys = await startSystem();
    // Each process would run 8 at once; only the queue's limit of 2 holds them back.
    await Promise.all([
      sys.startWorker({ SPOOL_WORKER_CONCURRENCY: "8" }),
      sys.startWorker({ SPOOL_WORKER_CONCURRENCY: "8" }),
    ]);
  });
  afterAll(() => sys?.stop());

  it("never runs more than 2 executions of a limit-2 queue at once, across 2 workers, under 20 runs", async () => {
    const { executions } = await sys.client.runBatch(
      Array.from({ length: 20 }, () => ({ workflow: "limited", input: {} })),
    );
    const ids = executions.map((e) => e.execution_id);
    for (const id of ids)
      expect((await sys.client.executions.waitForResult(id, { timeoutMs: 60_000 })).status).toBe("completed");

    // Each run recorded when its work started and ended; sweep the timeline for the peak overlap.
    const { rows } = await sys.db.query(
      "SELECT label, at, pid FROM test_side_effects WHERE execution_id = ANY($1::uuid[]) ORDER BY at, label DESC",
      [ids],
    );
    expect(rows.filter((r) => r.label === "start")).toHaveLength(20);
    let running = 0;
    let peak = 0;
    for (const r of rows) {
      running += r.label === "start" ? 1 : -1;
      peak = Math.max(peak, running);
    }
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

    const { rows } = await sys.db.query(
      `SELECT s.label, e.concurrency_key AS key FROM test_side_effects s JOIN executions e ON e.id = s.execution_id
        WHERE s.execution_id = ANY($1::uuid[]) ORDER BY s.at, s.label DESC`,
      [ids],
    );
    const running: Record<string, number> = { a: 0, b: 0 };
    const peak: Record<string, number> = { a: 0, b: 0 };
    let together = 0;
    for (const r of rows) {
      running[r.key] = (running[r.key] ?? 0) + (r.label === "start" ? 1 : -1);
      peak[r.key] = Math.max(peak[r.key] ?? 0, running[r.key] ?? 0);
      together = Math.max(together, (running.a ?? 0) + (running.b ?? 0));
    }
    expect(rows.filter((r) => r.label === "start")).toHaveLength(8);
    expect(peak).toEqual({ a: 1, b: 1 });
    // The partitions are apart: an 'a' and a 'b' did run at the same time.
    expect(together).toBe(2);
  });
});
