import type { Execution, PrismaClient, pg } from "@spool/db";
import { eventCursorOf } from "../execution/journal-store.js";
import { nextSeq } from "../execution/next-seq.js";
import type { NewWait } from "../runtime/journal.js";

/** One wait as the worker protocol's `POST /internal/executions/{id}/wait` describes it. */
export interface ProtocolWait {
  stepKey: string;
  waitType: "time" | "event" | "suspend";
  waitUntil?: Date | null;
  waitTopic?: string | null;
  expiresAt?: Date | null;
}

/**
 * The engine's wait for a protocol wait, reached now:
 * - time: a sleep until `wait_until`;
 * - event: the first event on the topic published from now on, unless `expires_at` passes first;
 * - suspend: a `resume_<step_key>` event on the topic (the run's). The SDK announces the suspend
 *   (`suspend_<step_key>`) before it calls /wait, so a resume published since that announcement
 *   answers it too, and the announcement's data is what the suspended run shows.
 */
export async function toNewWait(
  { prisma, pool }: { prisma: PrismaClient; pool: pg.Pool },
  execution: Execution,
  w: ProtocolWait,
): Promise<NewWait> {
  const base = { stepKey: w.stepKey, seq: await nextSeq(prisma, execution.id) };
  if (w.waitType === "time") return { ...base, kind: "sleep", wakeAt: w.waitUntil ?? new Date() };
  const topic = w.waitTopic!;
  const cursor = await eventCursorOf(pool, execution.id);
  if (w.waitType === "event") {
    return { ...base, kind: "event", topic, wakeAt: w.expiresAt ?? null, afterSequence: cursor };
  }
  const announced = await prisma.event.findFirst({
    where: { projectId: execution.projectId, topic, eventType: `suspend_${w.stepKey}` },
    orderBy: { sequenceId: "desc" },
    select: { sequenceId: true, data: true },
  });
  return {
    ...base,
    kind: "suspend",
    topic,
    eventType: `resume_${w.stepKey}`,
    wakeAt: w.expiresAt ?? null,
    afterSequence: announced ? announced.sequenceId : cursor,
    payload: announced?.data ?? null,
  };
}
