import type { Prisma } from "@spool/db";

/**
 * A finished run's open waits are closed, so no event or timer acts on it later. Returns the child
 * runs it was still waiting for: nobody will read their results, so the caller cancels them in the
 * same transaction (cancelTree), as a parent's cancel does.
 */
export async function closePendingWaits(
  tx: Prisma.TransactionClient,
  executionIds: string[],
): Promise<string[]> {
  const closed = await tx.wait.updateManyAndReturn({
    where: { executionId: { in: executionIds }, status: "pending" },
    data: { status: "cancelled" },
    select: { childExecutionId: true, childExecutionIds: true },
  });
  return closed.flatMap((w) => [...(w.childExecutionId ? [w.childExecutionId] : []), ...w.childExecutionIds]);
}
