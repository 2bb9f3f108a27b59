import type { Event, EventSettlement, Prisma, Wait } from "@spool/db";
import { Prisma as P } from "@spool/db";
import { type EngineDeps, TX_OPTIONS } from "../deps.js";
import type { DispatchRequest } from "../dispatch/dispatcher.js";
import { inLockOrder } from "../execution/lock.js";
import { resolveWait } from "../execution/resolve-wait.js";
import { withIdempotency } from "../idempotency/idempotency.js";
import { matchesFilter } from "./match.js";

export interface NewEvent {
  eventType?: string | null;
  data: Record<string, unknown>;
}

/** An event as clients see it (the wire shape is stored for idempotent replays). */
export interface PublishedEvent {
  id: string;
  sequence_id: number;
  topic: string;
  event_type: string | null;
  data: unknown;
  created_at: string;
}

export const toPublishedEvent = (e: Event): PublishedEvent => ({
  id: e.id,
  sequence_id: Number(e.sequenceId),
  topic: e.topic,
  event_type: e.eventType,
  data: e.data,
  created_at: e.createdAt.toISOString(),
});

/** Redis channel on which a committed publish is announced (payload: the highest sequence). */
export const eventsChannel = (projectId: string, topic: string) => `spool:events:${projectId}:${topic}`;
/** Channel the scheduler listens on to fire full trigger batches at once. */
export const PUBLISH_CHANNEL = "spool:published";

export type PublishListener = (projectId: string, topic: string, events: PublishedEvent[]) => void;

/** Waiting runs a publish wakes inside its own transaction; with more, it wakes them after answering. */
const INLINE_WAKE_MAX = 100;
/** Waits settled per transaction when a publish's runs are woken after it answered. */
const SETTLE_BATCH = 200;
/** Topics one process settles at once (each holds a pooled connection throughout). */
const MAX_SETTLERS = 2;
// One settler per topic across processes: a session-level advisory lock keyed by project and topic
// (the second key space keeps it apart from the migration lock).
const TRY_TOPIC_LOCK = "SELECT pg_try_advisory_lock(hashtextextended($1, 7370130002)) AS ok";
const TOPIC_UNLOCK = "SELECT pg_advisory_unlock(hashtextextended($1, 7370130002))";

export class Events {
  private readonly listeners: PublishListener[] = [];
  private settlers = 0;

  constructor(
    private readonly deps: EngineDeps & {
      redis: { publish(channel: string, message: string): Promise<unknown> };
    },
  ) {}

  /** Called after each committed publish (the trigger batcher hooks in here). */
  onPublished(listener: PublishListener): void {
    this.listeners.push(listener);
  }

  /**
   * Appends events to a topic. In one transaction: take the next per-project sequence numbers
   * (under the project row lock, so sequence order is commit order), insert, and settle every
   * waitForEvent step whose filter the events match. After commit: wake those runs and announce
   * the publish on Redis for live streams and the scheduler.
   */
  async publish(
    projectId: string,
    topic: string,
    events: NewEvent[],
    idempotencyKey?: string | null,
    options: {
      /** Runs inside the publish's transaction, after the events are numbered: throw to publish nothing. */
      guard?: (tx: Prisma.TransactionClient) => Promise<void>;
      /** Settle only this execution's waits (a resume through the API answers the run it names). */
      onlyExecutionId?: string;
      /** Runs inside the publish's transaction once the waits it answers are settled. */
      settled?: (tx: Prisma.TransactionClient) => Promise<void>;
    } = {},
  ) {
    const result = await withIdempotency(
      this.deps.prisma,
      { projectId, operation: `publish:${topic}`, key: idempotencyKey, request: events },
      async (tx) => {
        const rows = await appendEvents(tx, projectId, topic, events);
        await options.guard?.(tx);
        const later = !options.onlyExecutionId && (await settleLater(tx, projectId, topic, rows));
        const wakes = later
          ? []
          : await wakeAnswered(tx, await pendingWaits(tx, projectId, topic, options), rows);
        await options.settled?.(tx);
        const published = rows.map(toPublishedEvent);
        return { status: 201, body: published, after: { wakes, later } };
      },
    );
    if (result.after) {
      await this.deps.dispatcher.dispatch(result.after.wakes);
      await this.announce(projectId, topic, result.body);
      if (result.after.later) this.settleSoon(projectId, topic);
    }
    return { events: result.body, replayed: result.replayed };
  }

  /**
   * Wakes the runs a publish recorded for later (settleLater): its events' matching waits, a batch
   * of waits per transaction, one settler per topic at a time (across processes: a session advisory
   * lock) so each waiting run still takes the first event that answers it. Returns the runs woken.
   */
  async settleTopic(projectId: string, topic: string): Promise<number> {
    let woken = 0;
    for (;;) {
      const client = await this.deps.pool.connect();
      let locked = false;
      let broken = false;
      try {
        const { rows } = await client.query<{ ok: boolean }>(TRY_TOPIC_LOCK, [`${projectId}/${topic}`]);
        locked = rows[0]?.ok === true;
        // Another settler has the topic: it goes on until the topic has no settlement left.
        if (!locked) return woken;
        for (;;) {
          const next = await this.deps.prisma.eventSettlement.findFirst({
            where: { projectId, topic },
            orderBy: { id: "asc" },
          });
          if (!next) break;
          woken += await this.settleRange(next);
          await this.deps.prisma.eventSettlement.delete({ where: { id: next.id } });
        }
      } catch (err) {
        broken = true;
        throw err;
      } finally {
        if (locked) await client.query(TOPIC_UNLOCK, [`${projectId}/${topic}`]).catch(() => (broken = true));
        // A connection whose unlock may not have run is closed: that drops its session lock.
        client.release(broken);
      }
      // One recorded while the lock was being let go would otherwise wait for the sweep.
      const more = await this.deps.prisma.eventSettlement.findFirst({
        where: { projectId, topic },
        select: { id: true },
      });
      if (!more) return woken;
    }
  }

  /**
   * Settles what crashed or busy processes left (the scheduler's sweep): every topic with a recorded
   * settlement, a few topics at a time. Returns the runs woken.
   */
  async settleLeftovers(): Promise<number> {
    const topics = await this.deps.prisma.eventSettlement.findMany({
      distinct: ["projectId", "topic"],
      select: { projectId: true, topic: true },
      take: 100,
    });
    let woken = 0;
    for (const t of topics) woken += await this.settleTopic(t.projectId, t.topic);
    return woken;
  }

  /** Starts settling a topic in the background, unless this process already settles enough topics. */
  private settleSoon(projectId: string, topic: string): void {
    // Each settler holds a pooled connection for its whole run; the sweep takes what is left.
    if (this.settlers >= MAX_SETTLERS) return;
    this.settlers++;
    void this.settleTopic(projectId, topic)
      .catch((err) =>
        this.deps.logger.warn(
          { err: String(err), project_id: projectId, topic },
          "settling a publish failed; the sweep retries",
        ),
      )
      .finally(() => this.settlers--);
  }

  private async settleRange(settlement: EventSettlement): Promise<number> {
    const { projectId, topic } = settlement;
    const rows = await this.deps.prisma.event.findMany({
      where: {
        projectId,
        topic,
        sequenceId: { gte: settlement.firstSequence, lte: settlement.lastSequence },
      },
      orderBy: { sequenceId: "asc" },
    });
    let woken = 0;
    for (let after: string | undefined; ; ) {
      const batch = await this.deps.prisma.$transaction(async (tx) => {
        const waits = await pendingWaits(tx, projectId, topic, { after, take: SETTLE_BATCH });
        return { wakes: await wakeAnswered(tx, waits, rows), last: waits.at(-1)?.id, size: waits.length };
      }, TX_OPTIONS);
      await this.deps.dispatcher.dispatch(batch.wakes);
      woken += batch.wakes.length;
      if (batch.size < SETTLE_BATCH) return woken;
      after = batch.last;
    }
  }

  private async announce(projectId: string, topic: string, events: PublishedEvent[]) {
    const last = events.at(-1)?.sequence_id;
    for (const l of this.listeners) l(projectId, topic, events);
    if (last === undefined) return;
    // Best effort: streams also catch up from Postgres, and the scheduler sweeps triggers.
    await Promise.allSettled([
      this.deps.redis.publish(eventsChannel(projectId, topic), String(last)),
      // A run's own topic (agent token stream, flushed every 50 ms) is not a trigger source: don't
      // make every scheduler check triggers for it.
      topic.startsWith("workflow/")
        ? Promise.resolve()
        : this.deps.redis.publish(PUBLISH_CHANNEL, JSON.stringify({ projectId, topic, last })),
    ]);
  }

  /** The highest sequence on a topic (0 when empty): where a live-only stream starts. */
  async latestSequence(projectId: string, topic: string): Promise<number> {
    const last = await this.deps.prisma.event.findFirst({
      where: { projectId, topic },
      orderBy: { sequenceId: "desc" },
      select: { sequenceId: true },
    });
    return last ? Number(last.sequenceId) : 0;
  }

  /** The highest sequence of each of a project's topics (0 for an empty one), in one query. */
  async latestSequences(projectId: string, topics: string[]): Promise<Map<string, number>> {
    // Purpose: see above. Params: project, topics. Locks: none. Result: one row per topic.
    const rows = await this.deps.prisma.$queryRaw<{ topic: string; last: bigint | null }[]>(P.sql`
      SELECT t.topic, (SELECT max(e.sequence_id) FROM events e
                        WHERE e.project_id = ${projectId}::uuid AND e.topic = t.topic) AS last
        FROM unnest(${topics}::text[]) AS t(topic)`);
    return new Map(rows.map((r) => [r.topic, r.last === null ? 0 : Number(r.last)]));
  }

  /** Events of a topic after a sequence, oldest first. */
  async history(projectId: string, topic: string, afterSequenceId: number, limit: number) {
    const rows = await this.deps.prisma.event.findMany({
      where: { projectId, topic, sequenceId: { gt: BigInt(afterSequenceId) } },
      orderBy: { sequenceId: "asc" },
      take: limit + 1,
    });
    const page = rows.slice(0, limit).map(toPublishedEvent);
    return {
      events: page,
      nextSequenceId: page.at(-1)?.sequence_id ?? afterSequenceId,
      hasMore: rows.length > limit,
    };
  }
}

export async function appendEvents(
  tx: Prisma.TransactionClient,
  projectId: string,
  topic: string,
  events: NewEvent[],
): Promise<Event[]> {
  // Reserve n sequence numbers. Locks: the project row until commit (serializes publishes).
  // Result: the last reserved sequence, or nothing when the project is gone.
  const [reserved] = await tx.$queryRaw<{ last: bigint }[]>(P.sql`
    UPDATE projects SET event_sequence = event_sequence + ${events.length}
    WHERE id = ${projectId}::uuid RETURNING event_sequence AS last`);
  if (!reserved) throw new Error(`project ${projectId} vanished during publish`);
  const first = reserved.last - BigInt(events.length) + 1n;
  const now = new Date();
  return tx.event.createManyAndReturn({
    data: events.map((e, i) => ({
      projectId,
      topic,
      sequenceId: first + BigInt(i),
      eventType: e.eventType ?? null,
      data: e.data as Prisma.InputJsonValue,
      createdAt: now,
    })),
  });
}

/**
 * Holds off publishes to the execution's project until the transaction ends (they take the same
 * row's exclusive lock to number events). Taken before the execution's own row, in the order a
 * publish locks (project, then the executions it wakes), so the two cannot deadlock.
 */
export async function lockProjectEvents(tx: Prisma.TransactionClient, executionId: string): Promise<void> {
  // Purpose: see above. Params: execution id. Locks: the project row, FOR SHARE. Result: ignored.
  await tx.$queryRaw(P.sql`
    SELECT p.id FROM projects p JOIN executions e ON e.project_id = p.id
    WHERE e.id = ${executionId}::uuid FOR SHARE OF p`);
}

/**
 * A waitForEvent stored just now takes the first event published since its step was reached that
 * its filter matches (published while the run was still running, so no publish could match it).
 * The caller holds lockProjectEvents, so no event can commit between this read and the wait's own
 * commit unseen by both. Returns the run's wake-up dispatch, or null when nothing matched.
 */
export async function answerFromPublished(
  tx: Prisma.TransactionClient,
  wait: Wait,
): Promise<DispatchRequest | null> {
  if (!answeredByEvents(wait) || wait.topic === null || wait.afterSequence === null) return null;
  const PAGE = 500;
  for (let after = wait.afterSequence; ; ) {
    const page = await tx.event.findMany({
      where: { projectId: wait.projectId, topic: wait.topic, sequenceId: { gt: after } },
      orderBy: { sequenceId: "asc" },
      take: PAGE,
    });
    const event = page.find((e) => answers(e, wait));
    if (event) return resolveWait(tx, wait, { status: "resolved", output: toPublishedEvent(event) });
    if (page.length < PAGE) return null;
    after = page[page.length - 1]!.sequenceId;
  }
}

/**
 * Waits an event on their topic settles: waitForEvent, and a remote worker's suspend (which a
 * `resume_<step_key>` event on the run's topic answers). A workflow's own suspend has no topic: only
 * `POST /executions/{id}/resume` answers it.
 */
const answeredByEvents = (wait: Pick<Wait, "kind" | "topic">) =>
  wait.kind === "event" || (wait.kind === "suspend" && wait.topic !== null);

/** Does this event answer this wait: its type (when the wait names one) and its data filter. */
const answers = (e: Pick<Event, "eventType" | "data">, wait: Pick<Wait, "eventType" | "matchFilter">) =>
  (wait.eventType === null || e.eventType === wait.eventType) &&
  matchesFilter(e.data, wait.matchFilter ?? {});

/** Pending waits on a topic that an event can answer, in id order (a page of them when asked). */
function pendingWaits(
  tx: Prisma.TransactionClient,
  projectId: string,
  topic: string,
  o: { onlyExecutionId?: string; after?: string; take?: number } = {},
): Promise<Wait[]> {
  return tx.wait.findMany({
    where: {
      projectId,
      topic,
      kind: { in: ["event", "suspend"] },
      status: "pending",
      ...(o.onlyExecutionId ? { executionId: o.onlyExecutionId } : {}),
      ...(o.after ? { id: { gt: o.after } } : {}),
    },
    orderBy: { id: "asc" },
    ...(o.take ? { take: o.take } : {}),
  });
}

/**
 * Each wait takes the first of the events (published after it began to wait) its filter matches.
 * Their runs are locked (by resolveWait) in inLockOrder, as cancel locks them.
 */
async function wakeAnswered(
  tx: Prisma.TransactionClient,
  waits: Wait[],
  rows: Event[],
): Promise<DispatchRequest[]> {
  const ordered = [...rows].sort((a, b) => (a.sequenceId < b.sequenceId ? -1 : 1));
  const answered = waits.flatMap((wait) => {
    const event = ordered.find(
      (e) => (wait.afterSequence === null || e.sequenceId > wait.afterSequence) && answers(e, wait),
    );
    return event ? [{ wait, event }] : [];
  });
  const rank = new Map(
    (await inLockOrder(tx, [...new Set(answered.map((a) => a.wait.executionId))])).map((id, i) => [id, i]),
  );
  answered.sort((a, b) => (rank.get(a.wait.executionId) ?? 0) - (rank.get(b.wait.executionId) ?? 0));
  const wakes: DispatchRequest[] = [];
  for (const { wait, event } of answered) {
    const wake = await resolveWait(tx, wait, { status: "resolved", output: toPublishedEvent(event) });
    if (wake) wakes.push(wake);
  }
  return wakes;
}

/**
 * Whether a publish wakes its waiting runs after it answers instead of in its own transaction: when
 * more than INLINE_WAKE_MAX waits are pending on the topic (waking each takes milliseconds, under
 * the project's publish lock), or earlier events of the topic are still being settled (a run must
 * take the first event that answers it). If so, records the settlement, in the publish's
 * transaction, so a crash cannot lose it.
 */
async function settleLater(tx: Prisma.TransactionClient, projectId: string, topic: string, rows: Event[]) {
  if (rows.length === 0) return false;
  const sequences = rows.map((r) => r.sequenceId);
  const first = sequences.reduce((a, b) => (a < b ? a : b));
  const last = sequences.reduce((a, b) => (a > b ? a : b));
  // Purpose: see above. Params: project, topic, first and last sequence, INLINE_WAKE_MAX + 1.
  // Locks: none beyond the publish's (the project row). Result: the settlement's id, or none.
  const recorded = await tx.$queryRaw<{ id: bigint }[]>(P.sql`
    INSERT INTO event_settlements (project_id, topic, first_sequence, last_sequence)
    SELECT ${projectId}::uuid, ${topic}, ${first}, ${last}
     WHERE (SELECT count(*) FROM (SELECT 1 FROM waits
             WHERE project_id = ${projectId}::uuid AND topic = ${topic} AND status = 'pending'
               AND kind IN ('event', 'suspend') LIMIT ${INLINE_WAKE_MAX + 1}) w) > ${INLINE_WAKE_MAX}
        OR EXISTS (SELECT 1 FROM event_settlements WHERE project_id = ${projectId}::uuid AND topic = ${topic})
    RETURNING id`);
  return recorded.length > 0;
}
