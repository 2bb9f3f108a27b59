import type { Db, Execution, Prisma } from "@spool/db";
import type { ExecutionStatus } from "./statuses.js";
import { canTransition, sourcesOf } from "./statuses.js";

export interface TransitionArgs {
  executionId: string;
  to: ExecutionStatus;
  /** Allowed current statuses; defaults to every status the table lets move to `to`. */
  from?: ExecutionStatus[];
  /** Extra guard on the row (e.g. the dispatch sequence a job was made for). */
  where?: Prisma.ExecutionWhereInput;
  data?: Omit<Prisma.ExecutionUpdateManyMutationInput, "status">;
}

/**
 * The one write of an execution's status: a conditional UPDATE that only succeeds from an allowed
 * status. Returns the updated row, or null when the row was not in a `from` status (someone else
 * moved it first — the caller decides whether that is a conflict or a no-op).
 */
export async function transition(db: Db, args: TransitionArgs): Promise<Execution | null> {
  const from = args.from ?? sourcesOf(args.to);
  for (const status of from) {
    if (!canTransition(status, args.to)) throw new Error(`illegal transition ${status} → ${args.to}`);
  }
  const rows = await db.execution.updateManyAndReturn({
    where: { id: args.executionId, status: { in: from }, ...args.where },
    data: { ...args.data, status: args.to, updatedAt: new Date() },
  });
  return rows[0] ?? null;
}

/**
 * The statuses a hot-path transition written in raw SQL (one round trip; see start-execution.ts,
 * finish-execution.ts) may start from, checked against the same table: the SQL says
 * `status = ANY(<these>)` and sets `to`, and nothing else writes a status.
 */
export function rawTransition(from: ExecutionStatus[], to: ExecutionStatus): { from: string[]; to: string } {
  for (const status of from) {
    if (!canTransition(status, to)) throw new Error(`illegal transition ${status} → ${to}`);
  }
  return { from, to };
}
