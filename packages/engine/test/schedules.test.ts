import { describe, expect, it } from "vitest";
import { nextOccurrence, parseCron } from "../src/schedules/cron.js";
import { createTestEngine } from "./engine-fixture.js";

const at = (iso: string) => new Date(iso);

/** A clock the test moves by hand. */
function manualClock(start: string) {
  let now = at(start);
  return { now: () => now, set: (iso: string) => (now = at(iso)) };
}

describe("schedule firing", () => {
  it("fires each occurrence of an every-minute cron exactly once, even with two schedulers racing", async () => {
    const clock = manualClock("2030-01-01T00:00:30Z");
    const { engine, prisma, projectId } = await createTestEngine({ clock: clock.now });
    const { engine: replica } = await createTestEngine({ clock: clock.now });
    // allow_all: runs stay queued here (no worker), which "skip" would count as still running.
    const s = await engine.schedules.upsert(projectId, {
      workflowId: "wf",
      cron: "* * * * *",
      input: { region: "eu" },
      overlapPolicy: "allow_all",
    });
    expect(s.nextRunAt).toEqual(at("2030-01-01T00:01:00Z"));

    for (const minute of ["00:01:00", "00:01:20", "00:02:00", "00:02:59", "00:03:00"]) {
      clock.set(`2030-01-01T${minute}.500Z`);
      await Promise.all([
        engine.scheduleFiring.fireDue(),
        replica.scheduleFiring.fireDue(),
        engine.scheduleFiring.fireDue(),
      ]);
    }
    const runs = await prisma.execution.findMany({ where: { projectId }, orderBy: { createdAt: "asc" } });
    const stamps = runs.map((r) => (r.input as { schedule: { timestamp: string } }).schedule.timestamp);
    expect(stamps).toEqual([
      "2030-01-01T00:01:00.000Z",
      "2030-01-01T00:02:00.000Z",
      "2030-01-01T00:03:00.000Z",
    ]);
    expect(runs[1]!.input).toEqual({
      region: "eu",
      schedule: {
        schedule_id: s.id,
        key: "global",
        timestamp: "2030-01-01T00:02:00.000Z",
        last_timestamp: "2030-01-01T00:01:00.000Z",
        timezone: "UTC",
        upcoming: ["2030-01-01T00:03:00.000Z", "2030-01-01T00:04:00.000Z", "2030-01-01T00:05:00.000Z"],
      },
    });
  });

  it("a paused schedule does not fire; resuming starts from now, not from the missed occurrences", async () => {
    const clock = manualClock("2030-01-01T00:00:30Z");
    const { engine, prisma, projectId } = await createTestEngine({ clock: clock.now });
    const s = await engine.schedules.upsert(projectId, { workflowId: "wf", cron: "* * * * *" });
    await engine.schedules.update(projectId, s.id, { status: "paused" });
    clock.set("2030-01-01T00:05:10Z");
    await engine.scheduleFiring.fireDue(); // fireDue is global: count this project's runs only
    expect(await prisma.execution.count({ where: { projectId } })).toBe(0);
    const resumed = await engine.schedules.update(projectId, s.id, { status: "active" });
    expect(resumed.nextRunAt).toEqual(at("2030-01-01T00:06:00Z"));
    clock.set("2030-01-01T00:06:01Z");
    await engine.scheduleFiring.fireDue();
    expect(await prisma.execution.count({ where: { projectId } })).toBe(1);
  });

  it("overlap policies: skip drops, buffer_one keeps one, allow_all fires all while a run is unfinished", async () => {
    const clock = manualClock("2030-01-01T00:00:30Z");
    const { engine, prisma, projectId } = await createTestEngine({
      clock: clock.now,
      workflows: ["a", "b", "c"],
    });
    for (const [workflowId, overlapPolicy] of [
      ["a", "skip"],
      ["b", "buffer_one"],
      ["c", "allow_all"],
    ] as const) {
      await engine.schedules.upsert(projectId, { workflowId, cron: "* * * * *", overlapPolicy });
    }
    // Runs stay queued (no worker), so each one is still unfinished when the next minute comes.
    for (const minute of ["01", "02", "03"]) {
      clock.set(`2030-01-01T00:${minute}:01Z`);
      await engine.scheduleFiring.fireDue();
    }
    const count = (workflowId: string) => prisma.execution.count({ where: { projectId, workflowId } });
    expect([await count("a"), await count("b"), await count("c")]).toEqual([1, 1, 3]);

    // buffer_one: the held occurrence (00:02, the first one held) runs once the first run finishes.
    await prisma.execution.updateMany({
      where: { projectId, workflowId: "b" },
      data: { status: "completed" },
    });
    clock.set("2030-01-01T00:03:30Z");
    await engine.scheduleFiring.fireDue();
    const b = await prisma.execution.findMany({
      where: { projectId, workflowId: "b" },
      orderBy: { createdAt: "asc" },
    });
    expect(b.map((r) => (r.input as { schedule: { timestamp: string } }).schedule.timestamp)).toEqual([
      "2030-01-01T00:01:00.000Z",
      "2030-01-01T00:02:00.000Z",
    ]);
  });

  it("missed occurrences are skipped without a catch-up window and fired within one", async () => {
    const clock = manualClock("2030-01-01T00:00:30Z");
    const { engine, prisma, projectId } = await createTestEngine({
      clock: clock.now,
      workflows: ["strict", "catchup"],
    });
    await engine.schedules.upsert(projectId, {
      workflowId: "strict",
      cron: "* * * * *",
      overlapPolicy: "allow_all",
    });
    await engine.schedules.upsert(projectId, {
      workflowId: "catchup",
      cron: "* * * * *",
      overlapPolicy: "allow_all",
      catchupWindowSeconds: 600,
    });
    clock.set("2030-01-01T00:10:10Z"); // the scheduler was down for ten minutes
    await engine.scheduleFiring.fireDue();
    // Without a window only the occurrence that is just due (00:10, 10 s late) fires.
    expect(await prisma.execution.count({ where: { projectId, workflowId: "strict" } })).toBe(1);
    expect(await prisma.execution.count({ where: { projectId, workflowId: "catchup" } })).toBe(10);
  });

  it("re-declaring a schedule (a worker restart) keeps its due occurrences and the fields it leaves out", async () => {
    const clock = manualClock("2030-01-01T00:00:30Z");
    const { engine, prisma, projectId } = await createTestEngine({ clock: clock.now });
    const created = await engine.schedules.upsert(projectId, {
      workflowId: "wf",
      cron: "* * * * *",
      overlapPolicy: "allow_all",
      catchupWindowSeconds: 600,
    });
    // Changed through the API (PATCH) since the code declared it.
    await engine.schedules.update(projectId, created.id, { timezone: "Europe/Berlin", input: { team: "a" } });
    clock.set("2030-01-01T00:03:10Z"); // 00:01, 00:02 and 00:03 are due but not fired yet
    // What apps/worker/src/register-declared.ts sends on every start for `schedule: { cron }`.
    const redeclared = await engine.schedules.upsert(projectId, {
      workflowId: "wf",
      cron: "* * * * *",
      key: "global",
    });
    expect(redeclared).toMatchObject({
      id: created.id,
      nextRunAt: at("2030-01-01T00:01:00Z"),
      overlapPolicy: "allow_all",
      catchupWindowSeconds: 600,
      timezone: "Europe/Berlin",
      input: { team: "a" },
    });
    await engine.scheduleFiring.fireDue();
    const runs = await prisma.execution.findMany({ where: { projectId }, orderBy: { createdAt: "asc" } });
    expect(runs.map((r) => (r.input as { schedule: { timestamp: string } }).schedule.timestamp)).toEqual([
      "2030-01-01T00:01:00.000Z",
      "2030-01-01T00:02:00.000Z",
      "2030-01-01T00:03:00.000Z",
    ]);

    // New timing: the next occurrence is recomputed from now.
    const retimed = await engine.schedules.upsert(projectId, { workflowId: "wf", cron: "*/5 * * * *" });
    expect(retimed.nextRunAt).toEqual(at("2030-01-01T00:05:00Z"));
    expect(retimed.overlapPolicy).toBe("allow_all");
  });

  it("a paused schedule stays paused when re-declared", async () => {
    const clock = manualClock("2030-01-01T00:00:30Z");
    const { engine, prisma, projectId } = await createTestEngine({ clock: clock.now });
    const s = await engine.schedules.upsert(projectId, { workflowId: "wf", cron: "* * * * *" });
    await engine.schedules.update(projectId, s.id, { status: "paused" });
    const redeclared = await engine.schedules.upsert(projectId, {
      workflowId: "wf",
      cron: "* * * * *",
      timezone: "UTC",
      input: {},
    });
    expect(redeclared.status).toBe("paused");
    clock.set("2030-01-01T00:02:10Z");
    await engine.scheduleFiring.fireDue();
    expect(await prisma.execution.count({ where: { projectId } })).toBe(0);
  });

  it("pauses a schedule whose workflow is no longer registered instead of failing on every tick", async () => {
    const clock = manualClock("2030-01-01T00:00:30Z");
    const { engine, prisma, projectId } = await createTestEngine({ clock: clock.now });
    const s = await engine.schedules.upsert(projectId, { workflowId: "wf", cron: "* * * * *" });
    await prisma.workflowRegistration.deleteMany({ where: { projectId, workflowId: "wf" } });
    clock.set("2030-01-01T00:01:01Z");
    await engine.scheduleFiring.fireDue();
    expect(await engine.schedules.get(projectId, s.id)).toMatchObject({ status: "paused" });
    expect(await prisma.execution.count({ where: { projectId } })).toBe(0);
  });

  it("rejects invalid cron and timezone (400) and unknown workflows (404)", async () => {
    const { engine, projectId } = await createTestEngine();
    await expect(
      engine.schedules.upsert(projectId, { workflowId: "wf", cron: "* * * *" }),
    ).rejects.toMatchObject({ status: 400 });
    await expect(
      engine.schedules.upsert(projectId, { workflowId: "wf", cron: "0 0 * * * *" }),
    ).rejects.toMatchObject({ status: 400 });
    await expect(
      engine.schedules.upsert(projectId, { workflowId: "wf", cron: "61 * * * *" }),
    ).rejects.toMatchObject({ status: 400 });
    await expect(
      engine.schedules.upsert(projectId, { workflowId: "wf", cron: "* * * * *", timezone: "Mars/Olympus" }),
    ).rejects.toMatchObject({ status: 400, type: "INVALID_INPUT" });
    await expect(
      engine.schedules.upsert(projectId, { workflowId: "nope", cron: "* * * * *" }),
    ).rejects.toMatchObject({ status: 404 });
  });

  it("rejects a cron that matches no date (400), on create and on update", async () => {
    const { engine, projectId } = await createTestEngine();
    for (const cron of ["0 0 30 2 *", "0 0 31 4 *"]) {
      await expect(engine.schedules.upsert(projectId, { workflowId: "wf", cron })).rejects.toMatchObject({
        status: 400,
        type: "INVALID_INPUT",
        message: `cron '${cron}' never fires: no date matches it`,
      });
    }
    const s = await engine.schedules.upsert(projectId, { workflowId: "wf", cron: "0 0 29 2 *" }); // leap days
    expect(s.nextRunAt).not.toBeNull();
    await expect(engine.schedules.update(projectId, s.id, { cron: "0 0 30 2 *" })).rejects.toMatchObject({
      status: 400,
      type: "INVALID_INPUT",
    });
  });
});

describe("cron semantics", () => {
  it("uses Unix day-of-week (0 = Sunday, names allowed) and OR of day-of-month and day-of-week", () => {
    const sunday = parseCron("0 9 * * 0", "UTC");
    expect(nextOccurrence(sunday, at("2030-01-01T00:00:00Z"))).toEqual(at("2030-01-06T09:00:00Z")); // a Sunday
    expect(nextOccurrence(parseCron("0 9 * * SUN", "UTC"), at("2030-01-01T00:00:00Z"))).toEqual(
      at("2030-01-06T09:00:00Z"),
    );
    // 15th of the month OR Mondays
    const either = parseCron("0 0 15 * 1", "UTC");
    expect(nextOccurrence(either, at("2030-01-01T00:00:00Z"))).toEqual(at("2030-01-07T00:00:00Z"));
  });

  it("follows the timezone across DST: a skipped 02:30 runs once after the gap, a repeated one once", () => {
    const cron = parseCron("30 2 * * *", "Europe/Berlin");
    // 2030-03-31: clocks jump 02:00 → 03:00 CET→CEST. 02:30 does not exist that day.
    const spring = nextOccurrence(cron, at("2030-03-30T12:00:00Z"))!;
    expect(spring.toISOString()).toBe("2030-03-31T01:00:00.000Z"); // 03:00 CEST, first valid time
    // 2030-10-27: 03:00 CEST → 02:00 CET; 02:30 happens twice, fires once (first occurrence).
    const autumn = nextOccurrence(cron, at("2030-10-26T12:00:00Z"))!;
    expect(autumn.toISOString()).toBe("2030-10-27T00:30:00.000Z");
    expect(nextOccurrence(cron, autumn)!.toISOString()).toBe("2030-10-28T01:30:00.000Z");
    // Local 09:00 stays 09:00 local on both sides of the change.
    const nine = parseCron("0 9 * * *", "America/New_York");
    expect(nextOccurrence(nine, at("2030-03-09T20:00:00Z"))!.toISOString()).toBe("2030-03-10T13:00:00.000Z");
    expect(nextOccurrence(nine, at("2030-03-08T20:00:00Z"))!.toISOString()).toBe("2030-03-09T14:00:00.000Z");
  });
});
