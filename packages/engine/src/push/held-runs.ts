import type { pg } from "@spool/db";
import type { Dispatcher } from "../dispatch/dispatcher.js";
import { runDispatch } from "../execution/create-executions.js";

/**
 * Gives the running runs `holder` (an API process's consumer name) started on push workers without
 * jobs their jobs, under their current dispatch: a push dispatcher that takes one adopts the run if
 * its worker took the push, or starts it again under a new lease if the push may never have left.
 * Then they are marked held by those jobs (`push_holder` null). Used for a holder that is gone
 * (OrphanedJobs) and by a live one for runs it started but lost track of (`notUpdatedSince`,
 * `except` those it holds). Returns how many; none while Redis refuses a job (the caller tries
 * again later).
 */
export async function handOverHeldRuns(
  pool: pg.Pool,
  dispatcher: Dispatcher,
  holder: string,
  o: { notUpdatedSince?: Date; except?: ReadonlyMap<string, unknown> } = {},
): Promise<number> {
  // Purpose: the runs and their jobs' fields. Params: holder, and the latest update time (null: any).
  // Locks: none (the enqueue is idempotent per dispatch). The predicate is executions_push_holder_idx's.
  const { rows } = await pool.query<{
    id: string;
    projectId: string;
    dispatchQueue: string;
    dispatchSeq: number;
  }>(
    `SELECT id, project_id AS "projectId", dispatch_queue AS "dispatchQueue", dispatch_seq AS "dispatchSeq"
       FROM executions
      WHERE status = 'running' AND push_holder = $1 AND ($2::timestamptz IS NULL OR updated_at < $2)
      LIMIT 500`,
    [holder, o.notUpdatedSince ?? null],
  );
  const runs = rows.filter((r) => !o.except?.has(r.id));
  if (runs.length === 0) return 0;
  if ((await dispatcher.dispatch(runs.map((r) => runDispatch(r)))) < runs.length) return 0;
  // Purpose: those runs are their jobs' now. Locks: their rows.
  await pool.query(
    `UPDATE executions SET push_holder = NULL
      WHERE id = ANY($1::uuid[]) AND status = 'running' AND push_holder = $2`,
    [runs.map((r) => r.id), holder],
  );
  return runs.length;
}
