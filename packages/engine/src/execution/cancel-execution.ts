import type { Execution, Prisma } from "@spool/db";
import { conflict, isTerminal } from "@spool/shared";
import { type EngineDeps, TX_OPTIONS } from "../deps.js";
import type { SpanRow } from "../traces/span-rows.js";
import { afterFinish } from "./after-finish.js";
import { closePendingWaits } from "./close-waits.js";
import { inLockOrder, lockExecution, lockProjectExecution } from "./lock.js";
import { NON_TERMINAL } from "./statuses.js";
import { transition } from "./transition.js";

/**
 * Cancels an execution and every unfinished descendant, in one transaction. A running one is
 * cancelled in Postgres; its worker notices at its next step and stops. 409 when already terminal;
 * 404 for an unknown id or another project's.
 */
export async function cancelExecution(
  deps: EngineDeps,
  args: { projectId: string; executionId: string },
): Promise<Execution> {
  const tree = await deps.prisma.$transaction(async (tx) => {
    const row = await lockProjectExecution(tx, args.projectId, args.executionId);
    if (isTerminal(row.status)) {
      throw conflict(`execution is already ${row.status}`, { status: row.status });
    }
    return cancelTree(deps, tx, [row.id]);
  }, TX_OPTIONS);
  await afterCancel(deps, tree);
  return tree.cancelled.find((e) => e.id === args.executionId)!;
}

/**
 * Inside the caller's transaction: cancels these executions and all their unfinished descendants,
 * closes their waits and writes their spans. Rows are locked in (created_at, id) order: a parent is
 * always older than its children, and a publish locks the executions it wakes in the same order, so
 * none of them can deadlock with another. Returns the runs it moved and the spans to publish.
 */
export async function cancelTree(
  deps: EngineDeps,
  tx: Prisma.TransactionClient,
  rootIds: string[],
): Promise<{ cancelled: Execution[]; spans: SpanRow[] }> {
  if (rootIds.length === 0) return { cancelled: [], spans: [] };
  const ids = await inLockOrder(tx, [...rootIds, ...(await unfinishedDescendants(tx, rootIds))]);
  const now = new Date();
  const cancelled: Execution[] = [];
  for (const id of ids) {
    await lockExecution(tx, id);
    const moved = await transition(tx, {
      executionId: id,
      from: NON_TERMINAL,
      to: "cancelled",
      data: { cancelledAt: now, workerId: null },
    });
    if (moved) cancelled.push(moved);
  }
  await closePendingWaits(tx, ids); // their children are all in `ids` already
  const spans: SpanRow[] = [];
  for (const moved of cancelled) spans.push(...(await deps.traces.syncInTransaction(tx, moved)));
  return { cancelled, spans };
}

/**
 * After the commit: each cancelled run tells the parent waiting on it (a cancelled root fails its
 * parent's invoke step; a descendant's parent was cancelled with it, so nothing is waiting) and
 * `?wait=` clients.
 */
export async function afterCancel(deps: EngineDeps, tree: { cancelled: Execution[]; spans: SpanRow[] }) {
  deps.traces.publish(tree.spans);
  for (const moved of tree.cancelled) await afterFinish(deps, moved);
}

async function unfinishedDescendants(tx: Prisma.TransactionClient, rootIds: string[]): Promise<string[]> {
  const found: string[] = [];
  let frontier = rootIds;
  while (frontier.length > 0) {
    const children = await tx.execution.findMany({
      where: { parentExecutionId: { in: frontier }, status: { in: NON_TERMINAL } },
      select: { id: true },
    });
    frontier = children.map((c) => c.id);
    found.push(...frontier);
  }
  return found;
}
