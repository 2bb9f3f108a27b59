import type { Execution, Prisma } from "@spool/db";
import { conflict, isTerminal } from "@spool/shared";
import { type EngineDeps, TX_OPTIONS } from "../deps.js";
import { afterFinish } from "./after-finish.js";
import { closePendingWaits } from "./close-waits.js";
import { lockExecution, lockProjectExecution } from "./lock.js";
import { NON_TERMINAL } from "./statuses.js";
import { transition } from "./transition.js";

/**
 * Cancels an execution and every unfinished descendant, in one transaction, locking parents before
 * children. A running one is cancelled in Postgres; its worker notices at its next step and stops.
 * 409 when already terminal; 404 for an unknown id or another project's.
 */
export async function cancelExecution(
  deps: EngineDeps,
  args: { projectId: string; executionId: string },
): Promise<Execution> {
  const cancelled = await deps.prisma.$transaction(async (tx) => {
    const row = await lockProjectExecution(tx, args.projectId, args.executionId);
    if (isTerminal(row.status)) {
      throw conflict(`execution is already ${row.status}`, { status: row.status });
    }
    const now = new Date();
    const ids = [row.id, ...(await unfinishedDescendants(tx, row.id))];
    const done: Execution[] = [];
    for (const id of ids) {
      await lockExecution(tx, id);
      const moved = await transition(tx, {
        executionId: id,
        from: NON_TERMINAL,
        to: "cancelled",
        data: { cancelledAt: now, workerId: null },
      });
      if (moved) done.push(moved);
    }
    await closePendingWaits(tx, ids); // their children are all in `ids` already
    const spans = [];
    for (const moved of done) spans.push(...(await deps.traces.syncInTransaction(tx, moved)));
    return { done, spans };
  }, TX_OPTIONS);
  deps.traces.publish(cancelled.spans);
  // The root fails its parent's invoke step, if it has one; the descendants' parents were cancelled
  // with them, so for those this only tells `?wait=` clients.
  for (const moved of cancelled.done) await afterFinish(deps, moved);
  return cancelled.done[0]!;
}

async function unfinishedDescendants(tx: Prisma.TransactionClient, rootId: string): Promise<string[]> {
  const found: string[] = [];
  let frontier = [rootId];
  while (frontier.length > 0) {
    const children = await tx.execution.findMany({
      where: { parentExecutionId: { in: frontier }, status: { in: NON_TERMINAL } },
      select: { id: true },
      orderBy: { createdAt: "asc" },
    });
    frontier = children.map((c) => c.id);
    found.push(...frontier);
  }
  return found;
}
