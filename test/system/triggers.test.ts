import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, type Proc, type System, startSystem } from "./harness.js";

interface BatchInput {
  events: { sequence_id: number; data: { n: number } }[];
  trigger_id: string;
}

describe("event triggers and waitForEvent (real scheduler processes)", () => {
  let sys: System;
  let schedulers: Proc[];

  beforeAll(async () => {
    sys = await startSystem();
    await sys.startWorker(); // registers deployment "default" with the fixture workflows
    schedulers = await Promise.all([sys.startScheduler(), sys.startScheduler()]);
  });
  afterAll(() => sys?.stop());

  const register = (body: Record<string, unknown>) =>
    sys.client.request<{ trigger: { id: string; last_sequence_id: number } }>(
      "POST",
      "/event-triggers/register",
      {
        workflow_id: "batch-consumer",
        deployment_id: "default",
        ...body,
      },
    );
  const publish = async (topic: string, data: Record<string, unknown>) => {
    const events = await sys.client.events.publish(topic, data);
    return { sequence_ids: events.map((e) => e.sequence_id), events };
  };
  const batchesOf = async (triggerId: string) => {
    const { executions } = await sys.client.executions.list({ workflow_id: "batch-consumer", limit: 500 });
    // By first event, not created_at: batches fired in one go can share a millisecond.
    const firstSequence = (e: { input: unknown }) => (e.input as BatchInput).events[0]!.sequence_id;
    return executions
      .filter((e) => (e.input as BatchInput).trigger_id === triggerId)
      .sort((a, b) => firstSequence(a) - firstSequence(b));
  };

  it("1,000 events from 10 concurrent clients make exactly 10 batches of 100, in order, while a scheduler is killed", async () => {
    const topic = `bulk-${randomUUID()}`;
    await publish(topic, { n: -1 }); // before registration: must never be delivered
    const { trigger } = await register({ event_topic: topic, batch_size: 100 });
    let published = 0;
    let killed = false;
    const sequences: number[] = [];
    await Promise.all(
      Array.from({ length: 10 }, async (_, client) => {
        for (let i = 0; i < 100; i++) {
          const res = await publish(topic, { n: client * 100 + i });
          sequences.push(...res.sequence_ids);
          if (++published === 500 && !killed) {
            killed = true;
            await schedulers[0]!.kill("SIGKILL");
          }
        }
      }),
    );
    const batches = await eventually(
      async () => {
        const b = await batchesOf(trigger.id);
        return b.length >= 10 ? b : undefined;
      },
      30_000,
      "10 batches",
    );
    // A sentinel batch: batches fire one at a time, each advancing the trigger's cursor, so one more
    // batch of these 1,000 events (an 11th) would have fired before this one.
    const sentinel = await sys.client.events.publish(
      topic,
      Array.from({ length: 100 }, (_, i) => ({ n: 1000 + i })),
    );
    const all = await eventually(
      async () => {
        const b = await batchesOf(trigger.id);
        return b.some((r) => (r.input as BatchInput).events[0]!.data.n >= 1000) ? b : undefined;
      },
      30_000,
      "the sentinel batch",
    );
    expect(all.map((b) => b.id)).toEqual([...batches.map((b) => b.id), all.at(-1)!.id]);
    expect((all.at(-1)!.input as BatchInput).events.map((e) => e.sequence_id)).toEqual(
      sentinel.map((e) => e.sequence_id),
    );

    const delivered = batches.map((b) => (b.input as BatchInput).events.map((e) => e.sequence_id));
    for (const batch of delivered) {
      expect(batch).toHaveLength(100);
      expect(batch).toEqual([...batch].sort((a, b) => a - b));
    }
    const flat = delivered.flat();
    expect(flat).toEqual([...flat].sort((a, b) => a - b)); // batches follow each other in sequence order
    expect(new Set(flat).size).toBe(1000);
    expect([...flat].sort((a, b) => a - b)).toEqual([...sequences].sort((a, b) => a - b));
    expect(batches.flatMap((b) => (b.input as BatchInput).events.map((e) => e.data.n))).not.toContain(-1);
  }, 180_000); // 1,000 publishes one at a time: ~17 s here, ~30 s on a loaded 2-core CI box

  it("a partial batch (7 of 50) fires once, no sooner than 2 s after its first event, on the named queue", async () => {
    const topic = `partial-${randomUUID()}`;
    const { trigger } = await register({
      event_topic: topic,
      batch_size: 50,
      batch_timeout_seconds: 2,
      queue_name: "batch-q",
    });
    // In one publish: seven separate ones could straddle the 2 s timeout on a loaded machine.
    const published = await sys.client.events.publish(
      topic,
      Array.from({ length: 7 }, (_, n) => ({ n })),
    );
    const first = new Date(published[0]!.created_at);
    const [run] = await eventually(
      async () => {
        const b = await batchesOf(trigger.id);
        return b.length ? b : undefined;
      },
      10_000,
      "the partial batch",
    );
    // Never before its timeout (how soon after it is the benchmark's business, not a test's).
    expect(new Date(run!.created_at).getTime() - first.getTime()).toBeGreaterThanOrEqual(2000);
    expect((run!.input as BatchInput).events).toHaveLength(7);
    expect(run!.queue_name).toBe("batch-q");
    // A full batch after it fires at once; a second run of the 7 would have fired before it.
    const sentinel = await sys.client.events.publish(
      topic,
      Array.from({ length: 50 }, (_, i) => ({ n: 7 + i })),
    );
    const all = await eventually(
      async () => {
        const b = await batchesOf(trigger.id);
        return b.length >= 2 ? b : undefined;
      },
      10_000,
      "the sentinel batch",
    );
    expect(all.map((b) => (b.input as BatchInput).events.map((e) => e.sequence_id))).toEqual([
      (run!.input as BatchInput).events.map((e) => e.sequence_id),
      sentinel.map((e) => e.sequence_id),
    ]);
  });

  it("a paused trigger fires nothing and keeps its place: what was published meanwhile is batched once it resumes", async () => {
    const topic = `paused-${randomUUID()}`;
    const { trigger } = await register({ event_topic: topic, batch_size: 2 });
    const setStatus = (status: string) =>
      sys.client.request("PATCH", `/event-triggers/${trigger.id}`, { status });
    await setStatus("paused");
    await sys.client.events.publish(topic, [{ n: 1 }, { n: 2 }]);

    const resumedFrom = Date.now();
    await setStatus("active");
    await sys.client.events.publish(topic, [{ n: 3 }, { n: 4 }]);
    const batches = await eventually(
      async () => {
        const b = await batchesOf(trigger.id);
        return b.length >= 2 ? b : undefined;
      },
      30_000,
      "two batches",
    );
    expect(batches.map((b) => (b.input as BatchInput).events.map((e) => e.data.n))).toEqual([
      [1, 2],
      [3, 4],
    ]);
    // Not fired while paused: the held events' batch came after the resume.
    expect(new Date(batches[0]!.created_at).getTime()).toBeGreaterThanOrEqual(resumedFrom);
  });

  it("a trigger naming a queue no worker declared fires runs that complete, with no restart", async () => {
    const lane = `reports-${randomUUID()}`;
    const topic = `lane-${randomUUID()}`;
    const { trigger } = await register({ event_topic: topic, batch_size: 2, queue_name: lane });
    await publish(topic, { n: 1 });
    await publish(topic, { n: 2 });
    const [run] = await eventually(
      async () => {
        const b = await batchesOf(trigger.id);
        return b.length ? b : undefined;
      },
      10_000,
      "the batch",
    );
    expect(run!.queue_name).toBe(lane);
    const done = await sys.client.executions.waitForResult(run!.id, { timeoutMs: 30_000 });
    expect(done).toMatchObject({ status: "completed", result: { count: 2 } });
    // The lane is a queue of the project now, listed with what ran on it.
    const { queues } = await sys.client.request<{ queues: { name: string; queued: number }[] }>(
      "GET",
      "/queues?limit=100",
    );
    expect(queues.find((q) => q.name === lane)).toMatchObject({ queued: 0 });
  });

  it("triggers and schedules declared in defineWorkflow are registered by the worker and fire", async () => {
    const { triggers } = await sys.client.request<{
      triggers: { workflow_id: string; event_topic: string; batch_size: number }[];
    }>("GET", "/event-triggers");
    expect(triggers).toContainEqual(
      expect.objectContaining({ workflow_id: "declared", event_topic: "declared-topic", batch_size: 2 }),
    );
    const { schedules } = await sys.client.request<{ schedules: Record<string, unknown>[] }>(
      "GET",
      "/schedules",
    );
    expect(schedules).toContainEqual(
      expect.objectContaining({
        workflow_id: "declared",
        key: "yearly",
        cron: "0 0 1 1 *",
        timezone: "Europe/Paris",
        input: { kind: "annual" },
      }),
    );
    await publish("declared-topic", { n: 1 });
    await publish("declared-topic", { n: 2 });
    const run = await eventually(
      async () => (await sys.client.executions.list({ workflow_id: "declared" })).executions[0],
    );
    expect((await sys.client.executions.waitForResult(run.id)).result).toBe(2);
  });

  it("a waiting workflow resumes on a matching event, and times out with a clear error when none comes", async () => {
    const topic = `shipments-${randomUUID()}`;
    const { execution_id } = await sys.client.run("wait-event", { topic, orderId: "o-7", timeout: "1m" });
    await eventually(async () =>
      (await sys.client.executions.get(execution_id)).status === "waiting" ? true : undefined,
    );
    await publish(topic, { orderId: "o-8", status: "not mine" });
    // No window needed: a publish settles the waits it answers in order, so had this one matched, the
    // run's result below would be this event's, not the next one's.
    expect((await sys.client.executions.get(execution_id)).status).toBe("waiting");
    const { sequence_ids } = await publish(topic, { orderId: "o-7", status: "shipped" });
    const done = await sys.client.executions.waitForResult(execution_id);
    expect(done.result).toEqual({ status: "shipped", sequence: sequence_ids[0] });

    const timedOut = await sys.client.run("wait-event", { topic, orderId: "o-9", timeout: "1s" });
    const failed = await sys.client.executions.waitForResult(timedOut.execution_id);
    expect(failed.status).toBe("failed");
    expect(failed.error).toMatchObject({
      name: "StepTimeoutError",
      step_key: "shipped",
      message: expect.stringContaining(`step 'shipped' timed out waiting for an event on topic '${topic}'`),
    });
  });
});

// Batches fire on the publish announcement (full ones) and at their timeout (partial ones), not on
// the periodic check: this scheduler looks once at start and then not for 10 minutes. The database
// is this file's own: other test files' schedulers share Redis, not this database, so every batch
// here is this scheduler's.
describe("event-trigger batches with no periodic check", () => {
  let sys: System;

  beforeAll(async () => {
    sys = await startSystem({ ownDatabase: true });
    await sys.startWorker();
    const scheduler = await sys.startScheduler({ SPOOL_TRIGGER_CHECK_INTERVAL_MS: "600000" });
    await scheduler.waitFor((l) => l.msg === "listening for announcements", 60_000);
  });
  afterAll(() => sys?.stop());

  const registerOn = async (topic: string, batchSize: number, batchTimeoutSeconds: number) =>
    (
      await sys.client.request<{ trigger: { id: string } }>("POST", "/event-triggers/register", {
        workflow_id: "batch-consumer",
        deployment_id: "default",
        event_topic: topic,
        batch_size: batchSize,
        batch_timeout_seconds: batchTimeoutSeconds,
      })
    ).trigger;
  /** The events (their `n`) of each batch the trigger started. */
  const batchesOf = async (triggerId: string) =>
    (await sys.client.executions.list({ workflow_id: "batch-consumer", limit: 500 })).executions
      .filter((e) => (e.input as BatchInput).trigger_id === triggerId)
      .map((e) => (e.input as BatchInput).events.map((ev) => ev.data.n).sort((a, b) => a - b));

  it("starts on its batch_size-th event, once per batch, with exactly that batch's events", async () => {
    const topic = `announced-${randomUUID()}`;
    const trigger = await registerOn(topic, 5, 3600);
    const batches = () => batchesOf(trigger.id);
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 5; i++) await sys.client.events.publish(topic, { n: round * 5 + i });
      await eventually(
        async () => ((await batches()).length === round + 1 ? true : undefined),
        10_000,
        `batch ${round + 1}`,
      );
    }
    expect((await batches()).sort((a, b) => a[0]! - b[0]!)).toEqual([
      [0, 1, 2, 3, 4],
      [5, 6, 7, 8, 9],
      [10, 11, 12, 13, 14],
    ]);
  });

  // The publish tells the scheduler a batch has begun; it sleeps until that batch times out.
  it("starts when it times out, though the scheduler never looks on its own", async () => {
    const topic = `timed-${randomUUID()}`;
    const trigger = await registerOn(topic, 100, 1);
    await sys.client.events.publish(topic, { n: 1 });
    await sys.client.events.publish(topic, { n: 2 });
    const batches = await eventually(
      async () => {
        const found = await batchesOf(trigger.id);
        return found.length > 0 ? found : undefined;
      },
      20_000,
      "the timed-out batch",
    );
    expect(batches).toEqual([[1, 2]]);
  });
});
