import { type Db, Prisma } from "@spool/db";

/**
 * The seq the next step of a run takes: one past its stored steps and open waits. For steps whose
 * seq the worker does not assign itself (a remote worker speaking the Polos protocol); two steps
 * written at the same moment may share one, which only ties their order.
 */
export async function nextSeq(db: Db, executionId: string): Promise<number> {
  // Purpose: see above. Params: execution id. Locks: none. Result: one row.
  const [row] = await db.$queryRaw<{ next: number }[]>(Prisma.sql`
    SELECT GREATEST(
      (SELECT max(seq) FROM step_results WHERE execution_id = ${executionId}::uuid),
      (SELECT max(seq) FROM waits WHERE execution_id = ${executionId}::uuid),
      0) + 1 AS next`);
  return Number(row?.next ?? 1);
}
