import { type Execution, Prisma, type PrismaClient } from "@spool/db";

/** Why a queued run is not running, for the people looking at it. */
export interface Blocked {
  reason: "no_worker" | "concurrency_limit";
  message: string;
  /** Since when, as far as Postgres can tell. */
  since: Date;
}

export type BlockedReason = Blocked["reason"];

// Purpose: for each workflow, whether an online worker (in-cluster or push) advertises it, and when
// one that did was last heard from. Params: project, workflow ids. Locks: none. Result: one row per id.
const SERVED = (projectId: string, workflowIds: string[]) => Prisma.sql`
  SELECT wf AS "workflowId", coalesce(bool_or(w.status = 'online'), false) AS served,
         max(w.last_heartbeat_at) AS "lastSeen"
    FROM unnest(${workflowIds}::text[]) AS wf
    LEFT JOIN workers w ON w.project_id = ${projectId}::uuid
                       AND w.capabilities -> 'workflow_ids' @> jsonb_build_array(wf)
   GROUP BY wf`;

/**
 * Why each queued run of `runs` (one project's) is not running: no online worker serves its workflow
 * (which a queue of its own cannot fix: see take-run.ts), or its lane's partition is full. Runs
 * absent from the map are not blocked. One query, for the distinct workflows of the queued runs.
 */
export async function blockedRuns(prisma: PrismaClient, runs: Execution[]): Promise<Map<string, Blocked>> {
  const queued = runs.filter((r) => r.status === "queued");
  const blocked = new Map<string, Blocked>();
  if (queued.length === 0) return blocked;
  const rows = await prisma.$queryRaw<{ workflowId: string; served: boolean; lastSeen: Date | null }[]>(
    SERVED(queued[0]!.projectId, [...new Set(queued.map((r) => r.workflowId))]),
  );
  const served = new Map(rows.map((r) => [r.workflowId, r]));
  for (const run of queued) {
    const workers = served.get(run.workflowId);
    if (!workers?.served) {
      const lastSeen = workers?.lastSeen ?? null;
      blocked.set(run.id, {
        reason: "no_worker",
        message:
          `no online worker serves workflow '${run.workflowId}'` +
          (lastSeen
            ? `; the last one was heard from at ${lastSeen.toISOString()}`
            : "; none has registered it"),
        since: lastSeen && lastSeen > run.updatedAt ? lastSeen : run.updatedAt,
      });
    } else if (run.slotWaitingSince) {
      blocked.set(run.id, {
        reason: "concurrency_limit",
        message:
          `queue '${run.queueName}' is at its concurrency limit` +
          (run.concurrencyKey === null ? "" : ` for concurrency key '${run.concurrencyKey}'`) +
          "; the run starts when a run of it ends",
        since: run.slotWaitingSince,
      });
    }
  }
  return blocked;
}

// Purpose: the project's workflows with queued runs that no online worker serves. Params: project.
// Locks: none. Result: one row per workflow id.
const UNSERVED_WORKFLOWS = (projectId: string) => Prisma.sql`
  SELECT DISTINCT e.workflow_id AS "workflowId" FROM executions e
   WHERE e.project_id = ${projectId}::uuid AND e.status = 'queued'
     AND NOT EXISTS (SELECT 1 FROM workers w
                      WHERE w.project_id = e.project_id AND w.status = 'online'
                        AND w.capabilities -> 'workflow_ids' @> jsonb_build_array(e.workflow_id))`;

/** The filter of a list of runs blocked for `reason` (same judgement as blockedRuns). */
export async function blockedFilter(
  prisma: PrismaClient,
  projectId: string,
  reason: BlockedReason,
): Promise<Prisma.ExecutionWhereInput> {
  const unserved = (await prisma.$queryRaw<{ workflowId: string }[]>(UNSERVED_WORKFLOWS(projectId))).map(
    (r) => r.workflowId,
  );
  return reason === "no_worker"
    ? { status: "queued", workflowId: { in: unserved } }
    : { status: "queued", slotWaitingSince: { not: null }, workflowId: { notIn: unserved } };
}
