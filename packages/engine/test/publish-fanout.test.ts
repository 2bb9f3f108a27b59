// A publish that answers many waiting runs wakes them after it has answered, in batches: it holds
// nothing that other topics' publishes need, each run takes the first event that answers it, exactly
// once, and a settlement a process could not finish is finished by the scheduler's sweep.
import pg from "pg";
import { describe, expect, it } from "vitest";
import { runJobId } from "../src/dispatch/dispatcher.js";
import { createTestEngine } from "./engine-fixture.js";
import { databaseOfThisFile } from "./file-database.js";

const WAITING = 1000;

/** Runs parked on waitForEvent(topic), as a worker leaves them. */
async function parkOnTopic(db: pg.Client, projectId: string, topic: string, n: number) {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO executions (id, project_id, workflow_id, workflow_type, deployment_id, queue_name,
                             dispatch_queue, status, input, started_at, created_at, updated_at)
     SELECT gen_random_uuid(), $1, 'wf', 'workflow', 'd1', 'default', 'default', 'waiting', '{}', now(), now(), now()
       FROM generate_series(1, $2)
     RETURNING id`,
    [projectId, n],
  );
  await db.query(
    `INSERT INTO waits (id, project_id, execution_id, step_key, seq, kind, status, topic, after_sequence)
     SELECT gen_random_uuid(), $1, id, 'order', 0, 'event', 'pending', $2, 0 FROM unnest($3::uuid[]) AS id`,
    [projectId, topic, rows.map((r) => r.id)],
  );
  return rows.map((r) => r.id);
}

describe("a publish that wakes many waiting runs", () => {
  it("answers before they wake, blocks no other topic, and wakes each once with the first event", async () => {
    const { engine, prisma, projectId } = await createTestEngine();
    const db = new pg.Client({ connectionString: await databaseOfThisFile() });
    await db.connect();
    try {
      await parkOnTopic(db, projectId, "orders", WAITING);

      // Another process is settling the topic (it holds the topic's lock): this publish's settler
      // must leave it, so the publishes below are seen before any run wakes.
      const settler = new pg.Client({ connectionString: await databaseOfThisFile() });
      await settler.connect();
      await settler.query("SELECT pg_advisory_lock(hashtextextended($1, 7370130002))", [
        `${projectId}/orders`,
      ]);
      const first = await engine.events.publish(projectId, "orders", [{ data: { order: 1 } }]);
      const second = await engine.events.publish(projectId, "orders", [{ data: { order: 2 } }]);
      // Another topic of the project publishes at once, as do its inline wakes.
      const other = await engine.events.publish(projectId, "invoices", [{ data: { invoice: 1 } }]);
      expect(other.events).toHaveLength(1);
      const pending = await prisma.wait.count({ where: { projectId, topic: "orders", status: "pending" } });
      expect(pending).toBe(WAITING);
      expect(await prisma.eventSettlement.count({ where: { projectId } })).toBe(2);

      // The settler "dies": its session ends, and the scheduler's sweep finishes the work.
      await settler.end();
      expect(await engine.events.settleLeftovers()).toBe(WAITING);

      const firstSequence = first.events[0]!.sequence_id;
      const waits = await prisma.wait.findMany({ where: { projectId, topic: "orders" } });
      expect(waits.filter((w) => w.status === "resolved")).toHaveLength(WAITING);
      // Every run took the first event, not the second.
      expect(
        waits.every((w) => (w.resolvedData as { sequence_id: number }).sequence_id === firstSequence),
      ).toBe(true);
      expect(second.events[0]!.sequence_id).toBeGreaterThan(firstSequence);
      const runs = await prisma.execution.findMany({
        where: { projectId },
        select: { id: true, status: true, dispatchSeq: true },
      });
      expect(runs.every((r) => r.status === "queued" && r.dispatchSeq === 1)).toBe(true);
      expect(await prisma.eventSettlement.count({ where: { projectId } })).toBe(0);
      for (const r of runs.slice(0, 3)) {
        expect(await engine.dispatcher.jobState(projectId, "default", runJobId(r.id, 1))).toBe("waiting");
      }

      // Nothing is woken twice: settling again finds nothing to do.
      expect(await engine.events.settleLeftovers()).toBe(0);
      expect(await prisma.execution.count({ where: { projectId, dispatchSeq: { gt: 1 } } })).toBe(0);
    } finally {
      await db.end();
    }
  });

  it("wakes them in the background when nothing else holds the topic", async () => {
    const { engine, prisma, projectId } = await createTestEngine();
    const db = new pg.Client({ connectionString: await databaseOfThisFile() });
    await db.connect();
    try {
      const ids = await parkOnTopic(db, projectId, "signups", 300);
      await engine.events.publish(projectId, "signups", [{ data: { user: 1 } }]);
      await expect
        .poll(() => prisma.execution.count({ where: { id: { in: ids }, status: "queued" } }), {
          timeout: 60_000,
        })
        .toBe(ids.length);
      expect(await prisma.execution.count({ where: { id: { in: ids }, dispatchSeq: 1 } })).toBe(300);
      await expect.poll(() => prisma.eventSettlement.count({ where: { projectId } })).toBe(0);
    } finally {
      await db.end();
    }
  });
});
