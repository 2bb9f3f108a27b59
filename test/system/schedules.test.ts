import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, type System, startSystem } from "./harness.js";

describe("cron schedules with two scheduler replicas (clock at 30x: a minute per 2 s)", () => {
  let sys: System;
  beforeAll(async () => {
    sys = await startSystem();
    await sys.client.request("POST", "/workers/deployments", { deployment_id: "d1" });
    await sys.client.request("POST", "/workers/deployments/d1/workflows", {
      workflows: [{ workflow_id: "every-minute" }, { workflow_id: "paused-one" }],
    });
  });
  afterAll(() => sys?.stop());

  it("an every-minute schedule fires exactly once per minute; a paused one never", async () => {
    const every = await sys.client.request<{ id: string; next_run_at: string }>("POST", "/schedules", {
      workflow_id: "every-minute",
      cron: "* * * * *",
      overlap_policy: "allow_all", // nothing runs these (no worker), so each would count as still running
      // On a 30x clock a 1 s stall of a loaded machine is 30 s late; don't let that count as missed.
      catchup_window_seconds: 600,
    });
    const paused = await sys.client.request<{ id: string }>("POST", "/schedules", {
      workflow_id: "paused-one",
      cron: "* * * * *",
    });
    await sys.client.request("PATCH", `/schedules/${paused.id}`, { status: "paused" });

    // Both replicas share one virtual clock: same epoch, same speed.
    const clock = {
      SPOOL_CLOCK_SPEED: "30",
      SPOOL_CLOCK_EPOCH_MS: String(Date.now()),
      SPOOL_SCHEDULE_CHECK_INTERVAL_MS: "50",
    };
    await Promise.all([sys.startScheduler(clock), sys.startScheduler(clock)]);
    const fired = await eventually(
      async () => {
        const { executions } = await sys.client.executions.list({ workflow_id: "every-minute" });
        return executions.length >= 4 ? executions : undefined;
      },
      30_000,
      "four fires",
    );
    const stamps = fired
      .map((e) => (e.input as { schedule: { timestamp: string } }).schedule.timestamp)
      .sort()
      .slice(0, 3);
    // Three consecutive minutes, each once.
    const minutes = stamps.map((s) => new Date(s).getTime());
    expect(new Set(stamps).size).toBe(stamps.length);
    expect(minutes[1]! - minutes[0]!).toBe(60_000);
    expect(minutes[2]! - minutes[1]!).toBe(60_000);
    const all = (await sys.client.executions.list({ workflow_id: "every-minute", limit: 500 })).executions;
    const allStamps = all.map((e) => (e.input as { schedule: { timestamp: string } }).schedule.timestamp);
    expect(new Set(allStamps).size).toBe(allStamps.length); // never twice, whichever replica fired
    expect((await sys.client.executions.list({ workflow_id: "paused-one" })).executions).toHaveLength(0);
    expect(every.next_run_at).toBeTruthy();
  });
});

// The scheduler sleeps until the next occurrence it knows of: a schedule created meanwhile is
// announced, and it looks again at once. Its own database: no other test file's scheduler (they
// share Redis, not this database) can fire the schedule.
describe("a schedule created while the scheduler sleeps (clock at 30x)", () => {
  let sys: System;
  beforeAll(async () => {
    sys = await startSystem({ ownDatabase: true });
    await sys.client.request("POST", "/workers/deployments", { deployment_id: "d1" });
    await sys.client.request("POST", "/workers/deployments/d1/workflows", {
      workflows: [{ workflow_id: "announced-minute" }],
    });
  });
  afterAll(() => sys?.stop());

  it("fires from its first occurrence on, though the scheduler never looks on its own", async () => {
    // Nothing to fire at its start, and no look of its own for 10 minutes (5 hours on its clock).
    const scheduler = await sys.startScheduler({
      SPOOL_CLOCK_SPEED: "30",
      SPOOL_CLOCK_EPOCH_MS: String(Date.now()),
      SPOOL_SCHEDULE_CHECK_INTERVAL_MS: "600000",
    });
    await scheduler.waitFor((l) => l.msg === "listening for announcements", 60_000);
    await sys.client.request("POST", "/schedules", {
      workflow_id: "announced-minute",
      cron: "* * * * *",
      overlap_policy: "allow_all",
      catchup_window_seconds: 600,
    });
    const fired = await eventually(
      async () => {
        const { executions } = await sys.client.executions.list({ workflow_id: "announced-minute" });
        return executions.length >= 3 ? executions : undefined;
      },
      30_000,
      "three fires",
    );
    const minutes = fired
      .map((e) => new Date((e.input as { schedule: { timestamp: string } }).schedule.timestamp).getTime())
      .sort((a, b) => a - b);
    expect(new Set(minutes).size).toBe(minutes.length);
    expect(minutes[1]! - minutes[0]!).toBe(60_000);
    expect(minutes[2]! - minutes[1]!).toBe(60_000);
  });
});
