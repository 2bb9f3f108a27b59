import {
  type Execution,
  type LockTimeout,
  Prisma,
  type PrismaClient,
  type pg,
  queryTogether,
  queryTogetherAlone,
  type Worker,
} from "@spool/db";
import { TX_OPTIONS } from "../deps.js";
import { executionFields, unprefixed, workerFields } from "../sql/rows.js";
import { type Claim, heldUnder } from "./claim.js";
import {
  type CreatedRootRun,
  type InsertedRootRun,
  insertRootRun,
  insertRootRunFrom,
  ROOT_RUN_REGISTRATION,
  type RunRequest,
  rootRunRegistration,
} from "./create-executions.js";
import { type JournalRows, journalColumns, journalOf, type RawWait } from "./journal-store.js";
import { START, startedAsInserted, takenColumns } from "./start-execution.js";
import { laneHasLimit, takeRunInLane } from "./take-run.js";
import { transition } from "./transition.js";

/** What starting a run on a push worker found. */
export type PushStart =
  | { status: "started"; execution: Execution; worker: Worker; journal?: JournalRows }
  | { status: "stale" }
  /** The run's lane partition is full: it waits for a slot, without this job. */
  | { status: "slot_wait" }
  /** Push workers serve the workflow but none has room now (or all are paused until `retryAt`). */
  | { status: "full"; retryAt: Date | null }
  /** No online push worker serves the workflow. */
  | { status: "none" };

// How many runs a worker runs now.
const runningOn = (workerId: string) =>
  `(SELECT count(*) FROM executions x WHERE x.worker_id = ${workerId} AND x.status = 'running')`;

// Of the candidate workers (alias w): those with room first, then the least loaded (one count per
// worker: a full worker's key is its count plus 2^31, past every worker with room).
const LEAST_LOADED_FIRST = `
   ORDER BY (SELECT count(*) + CASE WHEN count(*) >= COALESCE(w.max_concurrent_executions, 2147483647)
                                    THEN 2147483648 ELSE 0 END
               FROM executions x WHERE x.worker_id = w.id AND x.status = 'running'),
            random()
   LIMIT 1`;

// The online push workers of a project that serve a workflow and are not paused after failed pushes
// (alias w); pushWorkerFor: least loaded first.
const pushWorkersOf = (projectId: string, workflowId: string) => `
     w.project_id = ${projectId} AND w.mode = 'push' AND w.status = 'online'
     AND w.capabilities -> 'workflow_ids' @> jsonb_build_array(${workflowId})
     AND (w.push_paused_until IS NULL OR w.push_paused_until <= now())`;
const pushWorkerFor = (projectId: string, workflowId: string) =>
  `${pushWorkersOf(projectId, workflowId)}${LEAST_LOADED_FIRST}`;

/** How recently an in-cluster worker process must have been seen for a run to be sent to it. */
export const CONSUMER_FRESH_MS = 3000;

// The online in-cluster worker processes of a project that serve a workflow and take runs without
// jobs, seen within CONSUMER_FRESH_MS (a frozen process is passed over), least loaded first.
const inClusterWorkerFor = (projectId: string, workflowId: string) => `
     w.project_id = ${projectId} AND w.mode = 'queue' AND w.status = 'online'
     AND w.capabilities -> 'workflow_ids' @> jsonb_build_array(${workflowId})
     AND w.consumer_name IS NOT NULL
     AND w.consumer_seen_at > now() - interval '${CONSUMER_FRESH_MS} milliseconds'${LEAST_LOADED_FIRST}`;

// The start of run e on a push worker (alias e), held by its job or by `pushHolder` (see
// takenColumns); roomOnPushWorker: if the worker has room (its running runs counted, plus `missed`:
// starts the count may not see) and e's lane has no limit.
const takeOnPushWorker = (workerId: string, now: string, pushHolder?: string) =>
  `SET ${takenColumns(workerId, now, now, pushHolder)}`;
// Whether a worker running `running` runs has room under its max (null: no max).
const hasRoom = (max: string, running: string) => `(${max} IS NULL OR ${running} < ${max})`;
const roomOnPushWorker = (workerId: string, max: string, missed = "0") => `
       ${hasRoom(max, `${runningOn(workerId)} + ${missed}`)}
       AND NOT (e.status = 'queued' AND ${laneHasLimit("e.project_id", "e.queue_name")})`;

// Every start of a run on a push worker (when `started` holds) moves the worker's push_starts on, so
// a concurrent start that counted the worker's runs before this one committed can tell (see
// START_QUEUED_ON_PUSH_WORKER).
const PUSH_STARTS_MOD = 2147483647;
const countStartOn = (workerId: string, started: string) => `
    UPDATE workers SET push_starts = (push_starts + 1) % ${PUSH_STARTS_MOD} WHERE id = ${workerId} AND ${started}`;
// How many starts on the worker committed after the statement's snapshot: its push_starts as locked
// (the latest version) less the snapshot's.
const startsSinceSnapshot = (workerId: string, lockedStarts: string) => `
       ((${lockedStarts}::bigint - (SELECT s.push_starts FROM workers s WHERE s.id = ${workerId}) + ${PUSH_STARTS_MOD})
         % ${PUSH_STARTS_MOD})`;

// Purpose: the least loaded online push worker of the workflow that is not paused, locked. With
// SKIP LOCKED a start takes another worker than one a concurrent start holds; without it (when all
// were held, as with a single worker), it waits its turn. Params: project, workflow. Locks: that
// worker's row. Result: the worker, or none (none serves it, all are paused, or all are held).
const lockPushWorker = (skipLocked: boolean) => `
  SELECT ${workerFields("w")} FROM workers w
   WHERE ${pushWorkerFor("$1::uuid", "$2::text")}
   FOR UPDATE OF w${skipLocked ? " SKIP LOCKED" : ""}`;
const LOCK_FREE_PUSH_WORKER = lockPushWorker(true);
const LOCK_PUSH_WORKER = lockPushWorker(false);

// Purpose: queued|running → running on the locked worker with a new lease, if the worker has room
// (counted after its lock, so no other start is missed) and the run's lane has no limit; with the
// run's journal. Params: execution, dispatch seq, lease, worker, the worker's max (null: none), now,
// from-statuses. Locks: the execution row (the worker's is held already). Result: the started row
// and its journal, or none (the run moved on, no room, or a limited lane).
const TAKE_FOR_PUSH = `
  WITH taken AS (
    UPDATE executions e ${takeOnPushWorker("$4::uuid", "$6")}
     WHERE e.id = $1::uuid AND e.dispatch_seq = $2 AND e.lease = $3 AND e.status = ANY($7::text[])
       AND ${roomOnPushWorker("$4::uuid", "$5::int")}
    RETURNING ${executionFields("e")}),
  counted AS (${countStartOn("$4::uuid", "EXISTS (SELECT 1 FROM taken)")})
  SELECT taken.*, ${journalColumns("$1::uuid")} FROM taken`;

/** How the one-statement start names the chosen worker's fields in its result. */
const WORKER_PREFIX = "worker.";

// Purpose: a job's queued run → running on the least loaded push worker with room, in one statement
// that reads nothing first: the worker and the run are locked by the same statement (SKIP LOCKED:
// never waiting, another worker taken instead; or, `waiting`, behind a concurrent start's commit),
// so the worker's running runs are counted in the statement's snapshot. A start on
// the same worker that committed between that snapshot and the lock (another replica's, or this
// process's exact path) is not in that count, but it moved the worker's push_starts on, and the
// locked row is its latest version: the starts since the snapshot are added to the count, so a
// worker is never pushed past its max by Spool's own count (the run is taken only with room left
// even if every missed start still runs; otherwise the caller counts again under the lock, in a
// statement of its own), runs pushed before their insert aside (push-dispatcher.ts: their worker's
// 429 bounds them). Params: execution, dispatch seq, now, push holder (null: the job holds the
// run). Locks: the worker's row, the
// execution row. Result: the started row, its journal and the worker (WORKER_PREFIX), or none (the
// run is not queued under this dispatch or is locked, no unlocked worker with room, a limited lane).
const startQueued = (waiting: boolean) => `
  WITH chosen AS (
    SELECT ${workerFields("w", WORKER_PREFIX)} FROM workers w, executions r
     WHERE r.id = $1::uuid AND r.dispatch_seq = $2 AND r.status = 'queued'
       AND ${pushWorkerFor("r.project_id", "r.workflow_id")}
     FOR UPDATE OF w, r${waiting ? "" : " SKIP LOCKED"}),
  taken AS (
    UPDATE executions e ${takeOnPushWorker(`chosen."${WORKER_PREFIX}id"`, "$3", "$4::text")}
      FROM chosen
     WHERE e.id = $1::uuid AND e.dispatch_seq = $2 AND e.status = 'queued'
       AND ${roomOnPushWorker(
         `chosen."${WORKER_PREFIX}id"`,
         `chosen."${WORKER_PREFIX}maxConcurrentExecutions"`,
         startsSinceSnapshot(`chosen."${WORKER_PREFIX}id"`, `chosen."${WORKER_PREFIX}pushStarts"`),
       )}
    RETURNING ${executionFields("e")}),
  counted AS (${countStartOn(`(SELECT "${WORKER_PREFIX}id" FROM chosen)`, "EXISTS (SELECT 1 FROM taken)")})
  SELECT taken.*, chosen.*, ${journalColumns("$1::uuid")} FROM taken, chosen`;
const START_QUEUED_ON_PUSH_WORKER = startQueued(false);
const START_QUEUED_ON_PUSH_WORKER_WAITING = startQueued(true);

// Purpose: a new root run, inserted already running on the least loaded in-cluster worker process
// that has room, which the row names as its holder (what inserting it queued and then starting it
// would leave, with one row version and one set of index entries instead of two); inserted queued
// when no process has room or its lane has a limit. Unlike a push worker's, the worker's row is not
// locked: an in-cluster worker's concurrency is a soft bound (its queues keep their own), so two API
// replicas starting runs on it at once may each miss the other's starts (a round each at most), and
// in exchange never wait for each other, nor for the worker's renewal of its row. Starts earlier in
// the same group commit are counted. Params: as INSERT_ROOT_RUN's. Locks: none. Result: the row, its
// lane's limit (laneLimited) and, when started, the worker (WORKER_PREFIX); none when the workflow
// is not registered.
const INSERT_ROOT_RUN_IN_CLUSTER = `
  WITH r AS (${ROOT_RUN_REGISTRATION}),
  chosen AS (
    SELECT c.id, c.consumer_name FROM (
      SELECT w.id, w.consumer_name, w.max_concurrent_executions, ${runningOn("w.id")} AS running
        FROM workers w, r
       WHERE ${inClusterWorkerFor("$2::uuid", "r.workflow_id")}) c
     WHERE ${hasRoom("c.max_concurrent_executions", "c.running")}
       AND NOT ${laneHasLimit("$2::uuid", "(SELECT queue FROM r)")}),
  inserted AS (${insertRootRunFrom("r LEFT JOIN chosen s ON true", {
    start: startedAsInserted("s.id", "$16", "s.consumer_name"),
  })})
  SELECT inserted.*, ${workerFields("w", WORKER_PREFIX)}
    FROM inserted LEFT JOIN workers w ON w.id = inserted."workerId"`;

// Purpose: a new root run, inserted already running on the least loaded online push worker of its
// workflow that has room (locked as START_QUEUED_ON_PUSH_WORKER locks it, SKIP LOCKED, and counted
// as it counts, the starts since the statement's snapshot included), held by `pushHolder`; what
// inserting it queued and then starting it would leave, in one statement. Inserted queued when no
// unlocked worker has room or its lane has a limit. Params: INSERT_ROOT_RUN's, push holder. Locks:
// the worker's row. Result: as INSERT_ROOT_RUN_IN_CLUSTER's.
const INSERT_ROOT_RUN_ON_PUSH_WORKER = `
  WITH r AS (${ROOT_RUN_REGISTRATION}),
  chosen AS (
    SELECT ${workerFields("w", WORKER_PREFIX)} FROM workers w, r
     WHERE ${pushWorkerFor("$2::uuid", "r.workflow_id")}
     FOR UPDATE OF w SKIP LOCKED),
  room AS (
    SELECT c.* FROM chosen c
     WHERE ${hasRoom(
       `c."${WORKER_PREFIX}maxConcurrentExecutions"`,
       `${runningOn(`c."${WORKER_PREFIX}id"`)} + ${startsSinceSnapshot(`c."${WORKER_PREFIX}id"`, `c."${WORKER_PREFIX}pushStarts"`)}`,
     )}
       AND NOT ${laneHasLimit("$2::uuid", "(SELECT queue FROM r)")}),
  inserted AS (${insertRootRunFrom("r LEFT JOIN room s ON true", {
    start: startedAsInserted(`s."${WORKER_PREFIX}id"`, "$16", "$17::text"),
  })}),
  counted AS (${countStartOn(
    `(SELECT "${WORKER_PREFIX}id" FROM room)`,
    `EXISTS (SELECT 1 FROM inserted WHERE inserted.status = '${START.to}')`,
  )})
  SELECT inserted.*, room.* FROM inserted LEFT JOIN room ON true`;

/**
 * A push worker that may be pushed a new run of `workflowId` before the run's insert
 * (push-dispatcher.ts): online, not paused, its calls proving the push's claim
 * (capabilities.spool_claims), serving a registered workflow (its latest registration's lane and
 * deployment) whose lane has no limit; with the runs it runs now.
 */
export interface PushableWorker {
  projectId: string;
  workflowId: string;
  lane: string;
  deploymentId: string;
  worker: Worker;
  running: number;
}

// Purpose: see PushableWorker (each worker's runs counted once, however many workflows it serves).
// Params: none. Locks: none. Result: one row per (push worker, workflow).
const PUSHABLE_WORKERS = `
  WITH w AS MATERIALIZED (
    SELECT w.*, ${runningOn("w.id")}::int AS running FROM workers w
     WHERE w.mode = 'push' AND w.status = 'online' AND w.push_endpoint_url IS NOT NULL
       AND w.capabilities @> '{"spool_claims": true}'::jsonb)
  SELECT ${workerFields("w", WORKER_PREFIX)}, w.project_id AS "projectId", f.workflow_id AS "workflowId",
         g.queue AS lane, g.deployment_id AS "deploymentId", w.running
    FROM w,
         jsonb_array_elements_text(CASE WHEN jsonb_typeof(w.capabilities -> 'workflow_ids') = 'array'
                                        THEN w.capabilities -> 'workflow_ids' ELSE '[]'::jsonb END)
           AS f(workflow_id),
         LATERAL (${rootRunRegistration((n) => ({ 2: "w.project_id", 3: "f.workflow_id" })[n] ?? "NULL")}) g
   WHERE ${pushWorkersOf("w.project_id", "f.workflow_id")} AND NOT ${laneHasLimit("w.project_id", "g.queue")}`;

/** Every PushableWorker, of every project. */
export async function pushableWorkers(prisma: PrismaClient): Promise<PushableWorker[]> {
  const rows = await prisma.$queryRaw<Record<string, unknown>[]>(Prisma.raw(PUSHABLE_WORKERS));
  return rows.map((row) => ({
    projectId: row.projectId as string,
    workflowId: row.workflowId as string,
    lane: row.lane as string,
    deploymentId: row.deploymentId as string,
    running: row.running as number,
    worker: unprefixed<Worker>(row, WORKER_PREFIX),
  }));
}

export type StartedOnPushWorker = { execution: Execution; worker: Worker; journal: JournalRows };
type StartedRow = Execution & { journalSteps: JournalRows["steps"]; journalWaits: RawWait[] };

/**
 * The longest the waiting start waits for the rows it locks. Another start holds the worker's row
 * for one commit; a transaction of the exact path, or anything slower, is left to that path.
 */
const WAITING_START_LOCK_TIMEOUT: LockTimeout = "100ms";
/** SQLSTATEs of a lock wait lock_timeout cut short, and of a deadlock Postgres broke. */
const GAVE_UP_WAITING = new Set(["55P03", "40P01"]);

/**
 * The first try of run jobs: each job's run, still queued under the job's dispatch, starts on the
 * least loaded push worker with room in one statement, with its journal. On a pool that groups
 * statements (the engine's, @spool/db) they go in one group commit (one transaction, one round
 * trip), in order: a later one counts the runs an earlier one started and holds the worker row that
 * one locked, so jobs of the same workflow started together neither lock each other out nor fill a
 * slot twice (apart, as after a group's rollback, they skip each other's locked rows instead). Null
 * for a job whose run did not start (it moved on or is held, every worker is full, locked by another
 * start or paused, a limited lane): startOnPushWorker, after reading the run, decides then.
 */
export function startQueuedOnPushWorkers(
  pool: pg.Pool,
  jobs: { executionId: string; dispatchSeq: number }[],
): Promise<StartedOnPushWorker | null>[] {
  const now = new Date();
  return queryTogether(
    pool,
    jobs.map((job) => startStatement(job, now, false)),
  ).map(async (result) => startedFrom((await result).rows[0]));
}

/** A new root run to start on a push worker by the process `pushHolder` names, without a job. */
export interface RootRunToPush {
  projectId: string;
  request: RunRequest;
  id: string;
  pushHolder: string;
}

/**
 * New root runs, each inserted already started on the least loaded push worker with room
 * (INSERT_ROOT_RUN_ON_PUSH_WORKER), held by the process `pushHolder` names, in one group commit (one
 * transaction, one round trip): as in startQueuedOnPushWorkers, each start counts those before it.
 * `started` is null when the run stays queued (no unlocked push worker with room, a limited lane):
 * its job must then be enqueued. An insert that fails fails its run.
 */
export function createRootRunsOnPushWorkers(
  pool: pg.Pool,
  runs: RootRunToPush[],
): Promise<{ created: CreatedRootRun; started: StartedOnPushWorker | null }>[] {
  return insertRootRunsStarted(
    pool,
    runs,
    { name: "spool_insert_root_run_on_push_worker", text: INSERT_ROOT_RUN_ON_PUSH_WORKER },
    (r) => [r.pushHolder],
  );
}

/**
 * New root runs, each inserted already started on the least loaded in-cluster worker process that
 * takes runs without jobs and has room (INSERT_ROOT_RUN_IN_CLUSTER), in one group commit; the row
 * names that process as its holder. `started` null: the run is queued, and its job must be enqueued.
 */
export function createRootRunsOnInClusterWorkers(
  pool: pg.Pool,
  runs: { projectId: string; request: RunRequest; id: string }[],
): Promise<{ created: CreatedRootRun; started: StartedOnPushWorker | null }>[] {
  return insertRootRunsStarted(
    pool,
    runs,
    { name: "spool_insert_root_run_in_cluster", text: INSERT_ROOT_RUN_IN_CLUSTER },
    () => [],
  );
}

/**
 * Runs inserted by `statement` (INSERT_ROOT_RUN's params, then `more`'s), in one group commit; each
 * started on the worker its row returns (WORKER_PREFIX), or queued.
 */
function insertRootRunsStarted<R extends { projectId: string; request: RunRequest; id: string }>(
  pool: pg.Pool,
  runs: R[],
  statement: { name: string; text: string },
  more: (run: R) => unknown[],
): Promise<{ created: CreatedRootRun; started: StartedOnPushWorker | null }>[] {
  const now = new Date();
  const inserts = runs.map((r) => insertRootRun(r.projectId, r.request, r.id, now));
  const results = queryTogether(
    pool,
    inserts.map((insert, i) => ({ ...statement, values: [...insert.statement.values, ...more(runs[i]!)] })),
  );
  return results.map(async (result, i) => {
    const row = (await result).rows[0] as (InsertedRootRun & Record<string, unknown>) | undefined;
    // The worker's columns (null when the run was not started) are not the run's.
    const worker = row && unprefixed<Worker>(row, WORKER_PREFIX);
    const created = inserts[i]!.created(row);
    if (!worker?.id || created.execution.status !== START.to) return { created, started: null };
    return { created, started: { execution: created.execution, worker, journal: { steps: [], waits: [] } } };
  });
}

/**
 * The same starts, the first waiting for the rows instead of skipping them: behind the commit of a
 * start that holds the worker's row (another API replica's round, on a push worker they share),
 * counting that start too; the rest, in the same transaction, hold the row it took and skip rows
 * others hold, so a round waits once and two rounds can never wait for each other. They go together
 * in a transaction of their own, outside the group commits (a wait there would hold up their other
 * statements); when the wait outlasts WAITING_START_LOCK_TIMEOUT or Postgres breaks a deadlock, all
 * give up (null for each): what would otherwise take the exact path's transaction, one run at a time.
 */
export function startQueuedOnPushWorkersWaiting(
  pool: pg.Pool,
  jobs: { executionId: string; dispatchSeq: number; pushHolder?: string }[],
  lockTimeout: LockTimeout = WAITING_START_LOCK_TIMEOUT,
): Promise<StartedOnPushWorker | null>[] {
  const now = new Date();
  return queryTogetherAlone(
    pool,
    jobs.map((job, i) => startStatement(job, now, i === 0, job.pushHolder)),
    lockTimeout,
  ).map(async (result) => {
    try {
      return startedFrom((await result).rows[0]);
    } catch (err) {
      if (GAVE_UP_WAITING.has((err as { code?: string }).code ?? "")) return null;
      throw err;
    }
  });
}

/** The one-statement start of a job's run, as a named statement (`waiting`: without SKIP LOCKED). */
function startStatement(
  job: { executionId: string; dispatchSeq: number },
  now: Date,
  waiting: boolean,
  pushHolder: string | null = null,
) {
  return {
    ...(waiting
      ? { name: "spool_start_queued_on_push_worker_waiting", text: START_QUEUED_ON_PUSH_WORKER_WAITING }
      : { name: "spool_start_queued_on_push_worker", text: START_QUEUED_ON_PUSH_WORKER }),
    values: [job.executionId, job.dispatchSeq, now, pushHolder],
  };
}

function startedFrom(row: StartedRow | undefined): StartedOnPushWorker | null {
  if (!row) return null;
  const worker = unprefixed<Worker>(row as unknown as Record<string, unknown>, WORKER_PREFIX);
  const { rest: execution, journal } = journalOf(row);
  return { execution, worker, journal };
}

/**
 * The common start of a pushed run in four round trips (begin, lock the worker, take the run,
 * commit; one more when every worker is held by another start), with its journal so the push can
 * carry it. Null when it cannot tell (no unlocked worker
 * with room, a limited lane, the run moved on): startOnPushWorker's general path decides then.
 */
async function startOnLeastLoaded(pool: pg.Pool, e: Execution): Promise<StartedOnPushWorker | null> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const lock = async (name: string, text: string) =>
      (await client.query<Worker>({ name, text, values: [e.projectId, e.workflowId] })).rows[0];
    const worker =
      (await lock("spool_lock_free_push_worker", LOCK_FREE_PUSH_WORKER)) ??
      (await lock("spool_lock_push_worker", LOCK_PUSH_WORKER));
    const taken = worker
      ? (
          await client.query<StartedRow>({
            name: "spool_take_for_push",
            text: TAKE_FOR_PUSH,
            values: [
              e.id,
              e.dispatchSeq,
              e.lease,
              worker.id,
              worker.maxConcurrentExecutions,
              new Date(),
              START.from,
            ],
          })
        ).rows[0]
      : undefined;
    if (!worker || !taken) {
      await client.query("ROLLBACK");
      return null;
    }
    await client.query("COMMIT");
    const { rest: execution, journal } = journalOf(taken);
    return { execution, worker, journal };
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

/**
 * Starts a queued run (the job made for `dispatchSeq`) on one of its project's online push workers
 * that serve its workflow, have room under their max_concurrent_executions and are not paused
 * after failed pushes: least loaded first. The chosen worker's row is locked while its running runs
 * are counted and the run moves to it, so two dispatchers never fill the same slot.
 */
export async function startOnPushWorker(
  db: { prisma: PrismaClient; pool: pg.Pool },
  args: { execution: Execution },
): Promise<PushStart> {
  const e = args.execution;
  const fast = await startOnLeastLoaded(db.pool, e);
  if (fast) return { status: "started", ...fast };
  const prisma = db.prisma;
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
      if (taken.status !== "started") return taken.status;
      await tx.$executeRawUnsafe(countStartOn("$1::uuid", "true"), w.id);
      return { execution: taken.execution, worker: w };
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

// Purpose: see markPushed. Params: execution, dispatch seq, lease. Locks: the execution row.
const MARK_PUSHED = `
  UPDATE executions SET pushed_lease = $3
   WHERE id = $1::uuid AND status = 'running' AND dispatch_seq = $2 AND lease = $3`;

/**
 * The run's push worker took the push (answered 200) under this claim: a dispatcher that adopts the
 * run's job later knows the run is out there (see Execution.pushedLease).
 */
export async function markPushed(pool: pg.Pool, claim: Claim, executionId: string): Promise<void> {
  await pool.query({
    name: "spool_mark_pushed",
    text: MARK_PUSHED,
    values: [executionId, claim.dispatchSeq, claim.lease],
  });
}
