import type { Event, Prisma, Wait } from "@spool/db";
import { Prisma as P } from "@spool/db";
import type { EngineDeps } from "../deps.js";
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

export class Events {
  private readonly listeners: PublishListener[] = [];

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
    } = {},
  ) {
    const result = await withIdempotency(
      this.deps.prisma,
      { projectId, operation: `publish:${topic}`, key: idempotencyKey, request: events },
      async (tx) => {
        const rows = await appendEvents(tx, projectId, topic, events);
        await options.guard?.(tx);
        const wakes = await settleWaits(tx, projectId, topic, rows, options.onlyExecutionId);
        const published = rows.map(toPublishedEvent);
        return { status: 201, body: published, after: wakes };
      },
    );
    if (result.after) {
      await this.deps.dispatcher.dispatch(result.after);
      await this.announce(projectId, topic, result.body);
    }
    return { events: result.body, replayed: result.replayed };
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

/**
 * Each pending wait on the topic takes the first new event its filter matches. Their runs
 * are locked (by resolveWait) in inLockOrder, as cancel locks them.
 */
async function settleWaits(
  tx: Prisma.TransactionClient,
  projectId: string,
  topic: string,
  rows: Event[],
  onlyExecutionId?: string,
): Promise<DispatchRequest[]> {
  const waits = await tx.wait.findMany({
    where: {
      projectId,
      topic,
      kind: { in: ["event", "suspend"] },
      status: "pending",
      ...(onlyExecutionId ? { executionId: onlyExecutionId } : {}),
    },
  });
  const ordered = [...rows].sort((a, b) => (a.sequenceId < b.sequenceId ? -1 : 1));
  const answered = waits.flatMap((wait) => {
    const event = ordered.find((e) => answers(e, wait));
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
