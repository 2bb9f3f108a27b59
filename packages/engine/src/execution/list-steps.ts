import { Prisma, type PrismaClient, type StepResult } from "@spool/db";
import { decodeSeqCursor, seqCursorOf, toPage } from "@spool/shared";

/**
 * A step as a run's page of steps shows it: a stored result, or a wait the run is parked on
 * (`pending`: a sleep until `wakeAt`, an event on `topic`, input, or child runs), so a run that waits
 * says what for and until when.
 */
export type StepView = Omit<StepResult, "status" | "executionId"> & {
  status: "completed" | "failed" | "pending";
  /** Pending waits: when a sleep ends, or when an event, input or child wait times out. */
  wakeAt: Date | null;
  topic: string | null;
  childExecutionIds: string[];
};

// Purpose: one page of a run's steps: its stored results and its pending waits (a wait reserved its
// step's seq; its result takes the seq when it settles, and the wait is pending no more), in the
// order the run reached them, keyset-paged on (seq, id). Params: execution, cursor seq and id (or
// null), page size + 1. Locks: none. Result: StepView rows.
const STEPS_PAGE = (executionId: string, after: { seq: number; id: string } | undefined, take: number) =>
  Prisma.sql`
  SELECT * FROM (
    SELECT s.id, s.step_key AS "stepKey", s.seq, s.kind, s.status, s.output, s.error, s.attempts,
           s.started_at AS "startedAt", s.completed_at AS "completedAt", NULL::timestamptz AS "wakeAt",
           NULL::text AS topic, ARRAY[]::uuid[] AS "childExecutionIds"
      FROM step_results s WHERE s.execution_id = ${executionId}::uuid
    UNION ALL
    SELECT w.id, w.step_key, w.seq, w.kind, 'pending', NULL, NULL, 0, w.created_at, NULL, w.wake_at, w.topic,
           CASE WHEN cardinality(w.child_execution_ids) > 0 THEN w.child_execution_ids
                WHEN w.child_execution_id IS NOT NULL THEN ARRAY[w.child_execution_id]
                ELSE ARRAY[]::uuid[] END
      FROM waits w WHERE w.execution_id = ${executionId}::uuid AND w.status = 'pending'
  ) step
  WHERE ${after?.seq ?? null}::int IS NULL OR (step.seq, step.id) > (${after?.seq ?? null}::int, ${after?.id ?? null}::uuid)
  ORDER BY step.seq, step.id
  LIMIT ${take}`;

/**
 * One page of a run's steps. The cursor is checked first (a forged one is a 400 whatever the run), then
 * `checkRun` (that the run is the caller's).
 */
export async function listSteps(
  prisma: PrismaClient,
  executionId: string,
  page: { limit: number; cursor?: string },
  checkRun: () => Promise<unknown>,
) {
  const after = decodeSeqCursor(page.cursor);
  await checkRun();
  const rows = await prisma.$queryRaw<StepView[]>(STEPS_PAGE(executionId, after, page.limit + 1));
  return toPage(rows, page.limit, (s) => seqCursorOf(s.seq, s.id));
}
