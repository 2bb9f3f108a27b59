import { type Execution, Prisma, type PrismaClient, type Worker } from "@spool/db";
import { TX_OPTIONS } from "../deps.js";
import { type Claim, heldUnder } from "./claim.js";
import { takeRunInLane } from "./take-run.js";
import { transition } from "./transition.js";

/** What starting a run on a push worker found. */
export type PushStart =
  | { status: "started"; execution: Execution; worker: Worker }
  | { status: "stale" }
  /** The run's lane partition is full: it waits for a slot, without this job. */
  | { status: "slot_wait" }
  /** Push workers serve the workflow but none has room now (or all are paused until `retryAt`). */
  | { status: "full"; retryAt: Date | null }
  /** No online push worker serves the workflow. */
  | { status: "none" };

/**
 * Starts a queued run (the job made for `dispatchSeq`) on one of its project's online push workers
 * that serve its workflow, have room under their max_concurrent_executions and are not paused
 * after failed pushes: least loaded first. The chosen worker's row is locked while its running runs
 * are counted and the run moves to it, so two dispatchers never fill the same slot.
 */
export async function startOnPushWorker(
  prisma: PrismaClient,
  args: { execution: Execution },
): Promise<PushStart> {
  const e = args.execution;
  // Purpose: the candidates and their load. Params: project, workflow. Locks: none (the chosen row
  // is locked below). Result: one row per online push worker that advertises the workflow.
  const candidates = await prisma.$queryRaw<{ id: string; running: number; pausedUntil: Date | null }[]>(
    Prisma.sql`
    SELECT w.id, w.push_paused_until AS "pausedUntil",
           (SELECT count(*)::int FROM executions x WHERE x.worker_id = w.id AND x.status = 'running') AS running
    FROM workers w
    WHERE w.project_id = ${e.projectId}::uuid AND w.mode = 'push' AND w.status = 'online'
      AND w.capabilities -> 'workflow_ids' @> jsonb_build_array(${e.workflowId}::text)
    ORDER BY running, random()`,
  );
  if (candidates.length === 0) return { status: "none" };
  const now = Date.now();
  const awake = candidates.filter((c) => !c.pausedUntil || c.pausedUntil.getTime() <= now);
  for (const candidate of awake) {
    const outcome = await prisma.$transaction(async (tx) => {
      const [worker] = await tx.$queryRaw<{ id: string }[]>(Prisma.sql`
        SELECT id FROM workers WHERE id = ${candidate.id}::uuid AND status = 'online' FOR UPDATE`);
      if (!worker) return "full" as const;
      const w = await tx.worker.findUniqueOrThrow({ where: { id: candidate.id } });
      const running = await tx.execution.count({ where: { workerId: w.id, status: "running" } });
      if (w.maxConcurrentExecutions !== null && running >= w.maxConcurrentExecutions) return "full" as const;
      const taken = await takeRunInLane(tx, e, w.id);
      return taken.status === "started" ? { execution: taken.execution, worker: w } : taken.status;
    }, TX_OPTIONS);
    if (outcome === "stale" || outcome === "slot_wait") return { status: outcome };
    if (outcome !== "full") return { status: "started", ...outcome };
  }
  const paused = candidates.flatMap((c) =>
    c.pausedUntil && c.pausedUntil.getTime() > now ? [c.pausedUntil] : [],
  );
  const retryAt =
    paused.length === candidates.length ? new Date(Math.min(...paused.map((d) => d.getTime()))) : null;
  return { status: "full", retryAt };
}

/**
 * running → queued under the same dispatch sequence: a push the worker did not take (busy, failed)
 * gives the run back to the job that pushed it, which tries again. Null when the run moved on.
 */
export function unstartExecution(prisma: PrismaClient, args: { executionId: string; claim: Claim }) {
  return transition(prisma, {
    executionId: args.executionId,
    from: ["running"],
    to: "queued",
    where: heldUnder(args.claim),
    data: { workerId: null },
  });
}

/**
 * The run's push worker took the push (answered 200) under this claim: a dispatcher that adopts the
 * run's job later knows the run is out there (see Execution.pushedLease).
 */
export async function markPushed(prisma: PrismaClient, claim: Claim, executionId: string): Promise<void> {
  await prisma.execution.updateMany({
    where: { id: executionId, status: "running", ...heldUnder(claim) },
    data: { pushedLease: claim.lease },
  });
}
