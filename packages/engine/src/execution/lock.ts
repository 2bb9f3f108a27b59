import { type Db, type Execution, Prisma } from "@spool/db";
import { isUuid, notFound } from "@spool/shared";

/**
 * Locks an execution row for the rest of the transaction.
 *
 * Lock order rule: whoever changes an execution's waits or steps from outside its worker (timers,
 * events, resume, child completion, cancel) locks the execution row first. The worker's block
 * transition updates the same row, so the two serialize and a wait resolved while the run was
 * parking is always seen by one of them (see block-execution.ts). Whoever locks several executions
 * locks them in inLockOrder.
 */
export async function lockExecution(db: Db, executionId: string): Promise<void> {
  await db.$queryRaw(Prisma.sql`SELECT id FROM executions WHERE id = ${executionId}::uuid FOR UPDATE`);
}

/**
 * A project's execution, locked and read after the lock (so its status is current).
 * 404 for an unknown id or another project's.
 */
export async function lockProjectExecution(
  db: Db,
  projectId: string,
  executionId: string,
): Promise<Execution> {
  const found = isUuid(executionId)
    ? await db.execution.findFirst({ where: { id: executionId, projectId }, select: { id: true } })
    : null;
  if (!found) throw notFound("execution", executionId);
  await lockExecution(db, found.id);
  return db.execution.findUniqueOrThrow({ where: { id: found.id } });
}

/**
 * Execution ids in the one order in which several are locked: (created_at, id). A parent is always
 * older than its children, so this is also parent before child (cancel, a finishing parent's
 * orphans), and publishes waking several runs cannot deadlock with them.
 */
export async function inLockOrder(db: Db, ids: string[]): Promise<string[]> {
  if (ids.length < 2) return ids;
  const rows = await db.execution.findMany({
    where: { id: { in: ids } },
    select: { id: true },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
  });
  return rows.map((r) => r.id);
}
