import { type EventTrigger, Prisma } from "@spool/db";
import { type EngineDeps, TX_OPTIONS } from "../deps.js";
import { toPublishedEvent } from "../events/events.js";
import { createExecutions } from "../execution/create-executions.js";
import { isRegistered } from "../registry/is-registered.js";

/** Most batches one trigger fires per call: a long backlog lets the other triggers have their turn. */
const MAX_BATCHES_PER_CALL = 50;

// When trigger t's next batch is ready, as isReady judges it: `now` when batch_size events wait
// after its cursor; else the first of them (by sequence) plus batch_timeout_seconds; null when no
// batch can be ready (no event waits, or fewer than batch_size and no timeout).
const batchDueAt = (now: Prisma.Sql) => Prisma.sql`
  CASE
    WHEN (SELECT count(*) FROM (
            SELECT 1 FROM events e
             WHERE e.project_id = t.project_id AND e.topic = t.event_topic
               AND e.sequence_id > t.last_sequence_id
             LIMIT t.batch_size) pending) >= t.batch_size THEN ${now}
    WHEN t.batch_timeout_seconds IS NOT NULL THEN (
            SELECT e.created_at FROM events e
             WHERE e.project_id = t.project_id AND e.topic = t.event_topic
               AND e.sequence_id > t.last_sequence_id
             ORDER BY e.sequence_id LIMIT 1) + make_interval(secs => t.batch_timeout_seconds)
  END`;

/**
 * Fires event-trigger batches. Every batch claims the trigger row (FOR UPDATE SKIP LOCKED), starts
 * its run and advances the trigger's cursor in one transaction of its own: each event lands in
 * exactly one batch per trigger, however many schedulers race and whichever of them dies mid-way,
 * and a backlog of large batches never grows one transaction past its timeout.
 */
export class TriggerFiring {
  constructor(private readonly deps: EngineDeps) {}

  /** Triggers of a topic that just received events (the publish notification path). */
  async fireForTopic(projectId: string, topic: string, now = new Date()): Promise<number> {
    const triggers = await this.deps.prisma.eventTrigger.findMany({
      where: { projectId, eventTopic: topic, status: "active" },
      select: { id: true },
    });
    return this.fireEach(triggers, now);
  }

  /** Triggers with a full batch waiting, or a partial one whose first event timed out. */
  async fireDue(now = new Date()): Promise<number> {
    // Purpose: find triggers that can fire now. Params: now. Locks: none (fire() claims).
    // Result: trigger ids.
    const due = await this.deps.prisma.$queryRaw<{ id: string }[]>(Prisma.sql`
      SELECT t.id FROM event_triggers t
       WHERE t.status = 'active' AND ${batchDueAt(Prisma.sql`${now}::timestamptz`)} <= ${now}::timestamptz`);
    return this.fireEach(due, now);
  }

  /**
   * When fireDue next has a batch to fire: now for a full batch waiting (a backlog fire() left, as
   * it fires at most MAX_BATCHES_PER_CALL at once, or one whose announcement was lost); otherwise
   * when the first partial batch times out; null when no batch waits.
   */
  async nextDue(): Promise<Date | null> {
    // Purpose: the scheduler's next wake-up. Params: none. Locks: none. Result: one row.
    const [row] = await this.deps.prisma.$queryRaw<{ at: Date | null }[]>(Prisma.sql`
      SELECT min(${batchDueAt(Prisma.sql`now()`)}) AS at FROM event_triggers t WHERE t.status = 'active'`);
    return row?.at ?? null;
  }

  /** One trigger failing (e.g. a lost connection mid-batch) must not hold back the others. */
  private async fireEach(triggers: { id: string }[], now: Date): Promise<number> {
    let fired = 0;
    for (const t of triggers) {
      try {
        fired += await this.fire(t.id, now);
      } catch (err) {
        this.deps.logger.warn({ trigger_id: t.id, err: String(err) }, "trigger firing failed");
      }
    }
    return fired;
  }

  /**
   * Fires the trigger's ready batches, one transaction each. Returns how many runs it started; stops
   * when nothing is ready or another scheduler holds the trigger (that one fires what is ready).
   */
  async fire(triggerId: string, now = new Date()): Promise<number> {
    let fired = 0;
    while (fired < MAX_BATCHES_PER_CALL && (await this.fireBatch(triggerId, now))) fired++;
    return fired;
  }

  /** Fires the next batch if it is ready; false when it is not or the trigger is held or paused. */
  private async fireBatch(triggerId: string, now: Date): Promise<boolean> {
    const outcome = await this.deps.prisma.$transaction(async (tx) => {
      const [claimed] = await tx.$queryRaw<{ id: string }[]>(Prisma.sql`
        SELECT id FROM event_triggers WHERE id = ${triggerId}::uuid AND status = 'active'
        FOR UPDATE SKIP LOCKED`);
      if (!claimed) return null;
      const t = await tx.eventTrigger.findUniqueOrThrow({ where: { id: triggerId } });
      const events = await tx.event.findMany({
        where: { projectId: t.projectId, topic: t.eventTopic, sequenceId: { gt: t.lastSequenceId } },
        orderBy: { sequenceId: "asc" },
        take: t.batchSize,
      });
      if (!isReady(t, events, now)) return null;
      if (!(await isRegistered(tx, t))) {
        // Firing would fail on every tick; paused, the trigger keeps its cursor until re-registered.
        await tx.eventTrigger.update({ where: { id: t.id }, data: { status: "paused" } });
        return { paused: t, dispatch: [] };
      }
      const created = await createExecutions(tx, t.projectId, [
        {
          workflowId: t.workflowId,
          deploymentId: t.deploymentId,
          queueName: t.queueName,
          input: { events: events.map(toPublishedEvent), trigger_id: t.id },
        },
      ]);
      await tx.eventTrigger.update({
        where: { id: t.id },
        data: { lastSequenceId: events.at(-1)!.sequenceId },
      });
      return { paused: null, dispatch: created.dispatch, created: created.executions };
    }, TX_OPTIONS);
    if (!outcome) return false;
    const t = outcome.paused;
    if (t) {
      this.deps.logger.warn(
        { trigger_id: t.id, workflow_id: t.workflowId, deployment_id: t.deploymentId },
        "event trigger paused: its workflow is not registered in the deployment; re-register the trigger to resume",
      );
      return false;
    }
    this.deps.metrics.runsCreated(outcome.created ?? []);
    await this.deps.dispatcher.dispatch(outcome.dispatch);
    return true;
  }
}

function isReady(t: EventTrigger, events: { createdAt: Date }[], now: Date): boolean {
  if (events.length === 0) return false;
  if (events.length >= t.batchSize) return true;
  if (t.batchTimeoutSeconds === null) return false;
  return now.getTime() - events[0]!.createdAt.getTime() >= t.batchTimeoutSeconds * 1000;
}
