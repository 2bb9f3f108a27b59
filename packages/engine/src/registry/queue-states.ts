import { Prisma, type PrismaClient } from "@spool/db";
import { decodeCursor, toPage } from "@spool/shared";

/** A queue (lane) as ops look at it: its limit, what waits, what runs, who can take its runs. */
export interface QueueState {
  name: string;
  concurrencyLimit: number | null;
  queued: number;
  running: number;
  waitingForSlot: number;
  consumers: number;
}

// Purpose: one page of a project's queues with their counts. Params: project, name after (the
// cursor, or null), page size + 1. Locks: none. Result: one row per queue, by name. A consumer is an
// online worker serving a workflow registered on the queue or with runs queued or running on it.
const QUEUE_STATES = (projectId: string, after: string | null, take: number) => Prisma.sql`
  SELECT q.name, q.concurrency_limit AS "concurrencyLimit",
         (SELECT count(*)::int FROM executions e
           WHERE e.project_id = q.project_id AND e.queue_name = q.name AND e.status = 'queued') AS queued,
         (SELECT count(*)::int FROM executions e
           WHERE e.project_id = q.project_id AND e.queue_name = q.name AND e.status = 'running') AS running,
         (SELECT count(*)::int FROM executions e
           WHERE e.project_id = q.project_id AND e.queue_name = q.name AND e.status = 'queued'
             AND e.slot_waiting_since IS NOT NULL) AS "waitingForSlot",
         (SELECT count(*)::int FROM workers w
           WHERE w.project_id = q.project_id AND w.status = 'online'
             AND EXISTS (SELECT 1 FROM jsonb_array_elements_text(w.capabilities -> 'workflow_ids') AS wf(id)
                          WHERE EXISTS (SELECT 1 FROM workflow_registrations r
                                         WHERE r.project_id = q.project_id AND r.workflow_id = wf.id
                                           AND coalesce(r.queue_name, 'default') = q.name)
                             OR EXISTS (SELECT 1 FROM executions e
                                         WHERE e.project_id = q.project_id AND e.queue_name = q.name
                                           AND e.workflow_id = wf.id AND e.status IN ('queued', 'running')))
         ) AS consumers
    FROM queues q
   WHERE q.project_id = ${projectId}::uuid AND (${after}::text IS NULL OR q.name > ${after})
   ORDER BY q.name
   LIMIT ${take}`;

/** A page of the project's queues, by name. */
export async function listQueueStates(
  prisma: PrismaClient,
  projectId: string,
  page: { limit: number; cursor?: string },
) {
  const after = decodeCursor(page.cursor);
  const rows = await prisma.$queryRaw<QueueState[]>(
    QUEUE_STATES(projectId, after ? String(after.id) : null, page.limit + 1),
  );
  return toPage(rows, page.limit, (q) => ({ k: q.name, id: q.name }));
}
