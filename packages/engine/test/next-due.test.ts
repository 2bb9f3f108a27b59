// When the scheduler has something to do next: it sleeps until then (or until told of a change)
// instead of polling. This file's database holds only its own triggers and schedules.
import { describe, expect, it } from "vitest";
import { SCHEDULES_CHANNEL } from "../src/schedules/schedules.js";
import { TRIGGERS_CHANNEL } from "../src/triggers/triggers.js";
import { createTestEngine } from "./engine-fixture.js";

const plus = (iso: string, seconds: number) => new Date(new Date(iso).getTime() + seconds * 1000);

describe("the next due time", () => {
  it("of triggers: the first waiting event of a trigger with a timeout, plus that timeout", async () => {
    const { engine, prisma, projectId } = await createTestEngine();
    const trigger = (eventTopic: string, batchTimeoutSeconds: number | null, batchSize = 10) =>
      engine.triggers.register(projectId, {
        workflowId: "wf",
        deploymentId: "d1",
        eventTopic,
        batchSize,
        batchTimeoutSeconds,
      });
    const publish = async (topic: string, n: number) =>
      (
        await engine.events.publish(
          projectId,
          topic,
          Array.from({ length: n }, (_, i) => ({ data: { i } })),
        )
      ).events;

    const slow = await trigger("slow", 600);
    await trigger("fast", 30);
    await trigger("untimed", null);
    expect(await engine.triggerFiring.nextDue()).toBeNull(); // no batch waiting

    // Only batches with a timeout count; of these, the first event after the cursor.
    await publish("untimed", 3);
    expect(await engine.triggerFiring.nextDue()).toBeNull();
    const [first] = await publish("slow", 2);
    expect(await engine.triggerFiring.nextDue()).toEqual(plus(first!.created_at, 600));
    const [fastFirst] = await publish("fast", 1);
    expect(await engine.triggerFiring.nextDue()).toEqual(plus(fastFirst!.created_at, 30));

    // A full batch is due now (a backlog fire() left, or a lost announcement), timeout or not.
    const [untimedFirst] = await publish("untimed", 7); // 10 after the cursor: a full batch
    expect(untimedFirst).toBeDefined();
    expect((await engine.triggerFiring.nextDue())!.getTime()).toBeLessThanOrEqual(Date.now());
    await prisma.eventTrigger.updateMany({
      where: { projectId, eventTopic: "untimed" },
      data: { status: "paused" },
    });

    // A paused trigger waits for nothing; a fired batch is not waiting any more.
    await prisma.eventTrigger.updateMany({
      where: { projectId, eventTopic: "fast" },
      data: { status: "paused" },
    });
    expect(await engine.triggerFiring.nextDue()).toEqual(plus(first!.created_at, 600));
    await prisma.eventTrigger.update({ where: { id: slow.id }, data: { batchSize: 2 } });
    expect(await engine.triggerFiring.fire(slow.id)).toBe(1);
    expect(await engine.triggerFiring.nextDue()).toBeNull();
  });

  it("of schedules: the earliest next occurrence of an active one, and whether one is buffered", async () => {
    let now = new Date("2030-01-01T00:00:30Z");
    const { engine, prisma, projectId } = await createTestEngine({ clock: () => now });
    expect(await engine.scheduleFiring.nextDue()).toEqual({ at: null, buffered: false });

    await engine.schedules.upsert(projectId, { workflowId: "wf", cron: "0 * * * *", key: "hourly" });
    const minutely = await engine.schedules.upsert(projectId, {
      workflowId: "wf",
      cron: "* * * * *",
      key: "minutely",
    });
    expect(await engine.scheduleFiring.nextDue()).toEqual({
      at: new Date("2030-01-01T00:01:00Z"),
      buffered: false,
    });

    await engine.schedules.update(projectId, minutely.id, { status: "paused" });
    expect((await engine.scheduleFiring.nextDue()).at).toEqual(new Date("2030-01-01T01:00:00Z"));

    // A buffered occurrence waits for a run to finish: no occurrence time says when.
    now = new Date("2030-01-01T00:00:40Z");
    await engine.schedules.update(projectId, minutely.id, { status: "active" });
    await prisma.schedule.update({ where: { id: minutely.id }, data: { bufferedRunAt: now } });
    expect(await engine.scheduleFiring.nextDue()).toEqual({
      at: new Date("2030-01-01T00:01:00Z"),
      buffered: true,
    });
  });

  it("changes when a schedule or a trigger is created or changed, and schedulers are told", async () => {
    const { engine, projectId } = await createTestEngine({ clock: () => new Date("2030-01-01T00:00:30Z") });
    const listener = engine.redis.duplicate();
    // Other test files share this Redis: only this project's announcements count.
    const heard: string[] = [];
    listener.on("message", (channel: string, message: string) => {
      if (message === projectId) heard.push(channel);
    });
    await listener.subscribe(SCHEDULES_CHANNEL, TRIGGERS_CHANNEL);
    try {
      const s = await engine.schedules.upsert(projectId, { workflowId: "wf", cron: "*/5 * * * *" });
      await engine.schedules.update(projectId, s.id, { cron: "*/10 * * * *" });
      const t = await engine.triggers.register(projectId, {
        workflowId: "wf",
        deploymentId: "d1",
        eventTopic: "told",
        batchSize: 5,
        batchTimeoutSeconds: 60,
      });
      await engine.triggers.setStatus(projectId, t.id, "paused");
      await engine.triggers.setStatus(projectId, t.id, "active");
      await expect.poll(() => heard.length).toBe(5);
      expect(heard).toEqual([
        SCHEDULES_CHANNEL,
        SCHEDULES_CHANNEL,
        TRIGGERS_CHANNEL,
        TRIGGERS_CHANNEL,
        TRIGGERS_CHANNEL,
      ]);
    } finally {
      listener.disconnect();
    }
  });
});
