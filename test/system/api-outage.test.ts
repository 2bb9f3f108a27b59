// In-cluster workers hold their runs through BullMQ job locks, not through the API: while the API
// their heartbeats go through is down, they are written off as offline, but their runs stay theirs
// and no step function runs a second time.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countOf } from "../fixtures/side-effects.js";
import { eventually, type Proc, type System, startSystem } from "./harness.js";

describe("the API is down for 60 s while in-cluster workers run (real processes)", () => {
  let sys: System;
  let api: Proc & { url: string; port: number };

  beforeAll(async () => {
    sys = await startSystem({ ownDatabase: true });
    api = await sys.startApiProcess();
    // Workers that reach Spool's API only through the process the test kills.
    const env = { SPOOL_API_URL: api.url, SPOOL_JOB_LOCK_MS: "10000" };
    await Promise.all([sys.startWorker(env), sys.startWorker(env)]);
    await sys.startScheduler();
  });
  afterAll(() => sys?.stop());

  it("6 runs of three 20 s steps each complete, every step function run exactly once", async () => {
    const runs = await Promise.all(Array.from({ length: 6 }, () => sys.client.run("slow-steps", {})));
    const ids = runs.map((r) => r.execution_id);
    await eventually(
      async () =>
        (await Promise.all(ids.map((id) => countOf(id, "step-1")))).every((n) => n === 1) ? true : undefined,
      30_000,
      "every run in its first step",
    );

    const killedAt = Date.now();
    await api.kill("SIGKILL");
    // Meanwhile the scheduler writes the workers off (their heartbeats fail) ...
    await eventually(
      async () => {
        const { rows } = await sys.db.query(
          "SELECT count(*)::int AS n FROM workers WHERE status = 'offline'",
        );
        return rows[0].n >= 2 ? true : undefined;
      },
      30_000,
      "both workers written off",
    );
    // The scenario: the API stays down for 60 s in all.
    await new Promise((r) => setTimeout(r, killedAt + 60_000 - Date.now()));
    api = await sys.startApiProcess(api.port);

    for (const id of ids) {
      const done = await sys.client.executions.waitForResult(id, { timeoutMs: 120_000 });
      expect(done.status).toBe("completed");
    }
    for (const id of ids) {
      expect([await countOf(id, "step-1"), await countOf(id, "step-2"), await countOf(id, "step-3")]).toEqual(
        [1, 1, 1],
      );
    }
  }, 240_000);
});
