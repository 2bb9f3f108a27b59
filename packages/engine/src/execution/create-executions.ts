import { randomUUID } from "node:crypto";
import { type Db, type Execution, type JsonInput, jsonOrNull, type pg } from "@spool/db";
import { isUuid, notFound } from "@spool/shared";
import { type DispatchRequest, type FirstRun, runJobId } from "../dispatch/dispatcher.js";
import { assertRoomForQueues, DEFAULT_MAX_QUEUES_PER_PROJECT } from "../registry/queue-cap.js";
import { EXECUTION_FIELDS } from "../sql/rows.js";
import { laneHasLimit } from "./take-run.js";

export const DEFAULT_QUEUE = "default";

export interface RunRequest {
  workflowId: string;
  input: unknown;
  deploymentId?: string | null;
  queueName?: string | null;
  concurrencyKey?: string | null;
  runTimeoutSeconds?: number | null;
  initialState?: unknown;
  sessionId?: string | null;
  userId?: string | null;
  parentExecutionId?: string | null;
  rootExecutionId?: string | null;
  stepKey?: string | null;
  waitForSubworkflow?: boolean | null;
  otelTraceparent?: string | null;
  channelContext?: unknown;
  /** The limit of the run's queue, when the queue does not exist yet. */
  queueConcurrencyLimit?: number | null;
}

/**
 * Inserts queued executions (all or nothing, inside the caller's transaction) and returns them
 * with the dispatches to send once that transaction has committed. A run's lane (`queue_name`) is
 * the one it names, else its workflow's; a lane a run names gets its queue row (within the
 * project's cap), so it is listed and may carry a limit. Its jobs go to the BullMQ queue its
 * workflow was registered on (see take-run.ts).
 */
export async function createExecutions(
  tx: Db,
  projectId: string,
  requests: RunRequest[],
  maxQueuesPerProject = DEFAULT_MAX_QUEUES_PER_PROJECT,
): Promise<{ executions: Execution[]; dispatch: DispatchRequest[] }> {
  const executions: Execution[] = [];
  for (const r of requests) {
    const registration = await tx.workflowRegistration.findFirst({
      where: {
        projectId,
        workflowId: r.workflowId,
        archivedAt: null,
        ...(r.deploymentId ? { deploymentId: r.deploymentId } : {}),
      },
      orderBy: { updatedAt: "desc" },
    });
    if (!registration) {
      throw notFound(
        "workflow",
        r.deploymentId ? `${r.workflowId}' in deployment '${r.deploymentId}` : r.workflowId,
      );
    }
    let rootExecutionId: string | null = null;
    if (r.parentExecutionId) {
      const parent = isUuid(r.parentExecutionId)
        ? await tx.execution.findFirst({ where: { id: r.parentExecutionId, projectId } })
        : null;
      if (!parent) throw notFound("parent execution", r.parentExecutionId);
      rootExecutionId = parent.rootExecutionId ?? parent.id;
    } else if (r.rootExecutionId) {
      // Without a parent, a given root must be a run of this project: the root decides the trace a
      // run joins (trace id = root id), and another project's trace is none of its business.
      const root = isUuid(r.rootExecutionId)
        ? await tx.execution.findFirst({ where: { id: r.rootExecutionId, projectId }, select: { id: true } })
        : null;
      if (!root) throw notFound("root execution", r.rootExecutionId);
      rootExecutionId = root.id;
    }
    const id = randomUUID();
    const now = new Date();
    const dispatchQueue = registration.queueName ?? DEFAULT_QUEUE;
    executions.push(
      await tx.execution.create({
        data: {
          id,
          projectId,
          workflowId: r.workflowId,
          workflowType: registration.workflowType,
          deploymentId: registration.deploymentId,
          queueName: r.queueName ?? dispatchQueue,
          dispatchQueue,
          status: "queued",
          input: (r.input ?? {}) as JsonInput,
          concurrencyKey: r.concurrencyKey ?? null,
          parentExecutionId: r.parentExecutionId ?? null,
          // A root execution is its own root: one trace per root (trace_id = root id).
          rootExecutionId: rootExecutionId ?? id,
          stepKey: r.stepKey ?? null,
          waitForSubworkflow: r.waitForSubworkflow ?? false,
          runTimeoutSeconds: r.runTimeoutSeconds ?? null,
          deadlineAt: r.runTimeoutSeconds ? new Date(now.getTime() + r.runTimeoutSeconds * 1000) : null,
          initialState: jsonOrNull(r.initialState),
          sessionId: r.sessionId ?? null,
          userId: r.userId ?? null,
          otelTraceparent: r.otelTraceparent ?? null,
          channelContext: jsonOrNull(r.channelContext),
          createdAt: now,
        },
      }),
    );
  }
  // The lanes runs named (or gave a limit), each once: a new one gets its row, with the limit the
  // first run that named it gave; an existing one keeps its limit.
  const lanes = new Map<string, number | null>();
  for (const [i, r] of requests.entries()) {
    const name = executions[i]!.queueName;
    if ((r.queueName || r.queueConcurrencyLimit) && !lanes.has(name))
      lanes.set(name, r.queueConcurrencyLimit ?? null);
  }
  await assertRoomForQueues(tx, projectId, [...lanes.keys()], maxQueuesPerProject);
  if (lanes.size > 0) {
    await tx.queue.createMany({
      data: [...lanes].map(([name, concurrencyLimit]) => ({ projectId, name, concurrencyLimit })),
      skipDuplicates: true,
    });
  }
  return { executions, dispatch: executions.map((e) => runDispatch(e)) };
}

/** How a statement names parameter `n` of a root run's insert (INSERT_ROOT_RUN numbers them 1–16). */
export type RootRunParam = (n: number) => string;
const numbered: RootRunParam = (n) => `$${n}`;

/** The registration a new root run is made from: its workflow's latest unarchived one. */
export const rootRunRegistration = (p: RootRunParam = numbered) => `
  SELECT workflow_id, workflow_type, deployment_id, COALESCE(queue_name, '${DEFAULT_QUEUE}') AS queue
    FROM workflow_registrations
   WHERE project_id = ${p(2)}::uuid AND workflow_id = ${p(3)} AND (${p(4)}::text IS NULL OR deployment_id = ${p(4)})
     AND archived_at IS NULL
   ORDER BY updated_at DESC LIMIT 1`;
export const ROOT_RUN_REGISTRATION = rootRunRegistration();

/**
 * The insert of a new root run from `from`, which names its registration `r` (rootRunRegistration),
 * queued; or, with `start`, as that status, with those columns set too (the run started as inserted).
 * `onConflict`: what a row with its id already there does (an ON CONFLICT (id) clause). Params (named
 * by `p`) and result: as INSERT_ROOT_RUN's, unless `returning` says what to return.
 */
export const insertRootRunFrom = (
  from: string,
  o: {
    start?: { status: string; columns: string; values: string };
    p?: RootRunParam;
    onConflict?: string;
    returning?: string;
  } = {},
) => {
  const { start, p = numbered } = o;
  return `
  INSERT INTO executions (id, project_id, workflow_id, workflow_type, deployment_id, queue_name,
    dispatch_queue, status, input, concurrency_key, root_execution_id, step_key, wait_for_subworkflow,
    run_timeout_seconds, deadline_at, initial_state, session_id, user_id, otel_traceparent,
    channel_context, created_at, updated_at${start ? `, ${start.columns}` : ""})
  SELECT ${p(1)}::uuid, ${p(2)}::uuid, r.workflow_id, r.workflow_type, r.deployment_id, r.queue, r.queue,
         ${start?.status ?? "'queued'"}, ${p(5)}::jsonb, ${p(6)}, ${p(1)}::uuid, ${p(7)}, ${p(8)}, ${p(9)}, ${p(10)},
         ${p(11)}::jsonb, ${p(12)}, ${p(13)}, ${p(14)}, ${p(15)}::jsonb, ${p(16)}, ${p(16)}${start ? `, ${start.values}` : ""}
    FROM ${from}${o.onConflict ? `\n  ${o.onConflict}` : ""}
  RETURNING ${
    o.returning ??
    `${EXECUTION_FIELDS},
            ${laneHasLimit("executions.project_id", "executions.queue_name")} AS "laneLimited"`
  }`;
};

// Purpose: a root run (its own root) of a registered workflow on its workflow's own queue, in one
// autocommitted statement (no transaction round trips). Params: id, project, workflow, deployment
// (or null: the newest registration), input, concurrency key, step key, wait_for_subworkflow, run
// timeout, deadline, initial state, session, user, traceparent, channel context, now. Locks: none.
// Result: the new row and whether its lane has a limit, or none when the workflow is not registered.
const INSERT_ROOT_RUN = insertRootRunFrom(`(${ROOT_RUN_REGISTRATION}) r`);
// Purpose: INSERT_ROOT_RUN's, unless a row with the id exists (inserted by another process meanwhile:
// the statement then waits for its commit and inserts nothing). Params, locks, result: as INSERT_ROOT_RUN's.
const INSERT_ROOT_RUN_IF_ABSENT = insertRootRunFrom(`(${ROOT_RUN_REGISTRATION}) r`, {
  onConflict: "ON CONFLICT (id) DO NOTHING",
});

/** The most bytes of JSON input a run's first job carries (FirstRun); a larger one is read at start. */
const MAX_FIRST_JOB_INPUT_BYTES = 4096;

/** Whether createRootRun can take a request: a root run on its workflow's own queue. */
export const isPlainRootRun = (r: RunRequest) =>
  !r.parentExecutionId && !r.rootExecutionId && !r.queueName && !r.queueConcurrencyLimit;

/**
 * The hot path of `POST …/run`: the same row createExecutions would insert for a root run, in one
 * statement, and the job to enqueue once it is in. The job carries what the run's start would read
 * (FirstRun) when its input is small and its lane had no limit at the insert.
 */
export async function createRootRun(
  pool: pg.Pool,
  projectId: string,
  r: RunRequest,
  id: string = randomUUID(),
): Promise<CreatedRootRun> {
  const insert = insertRootRun(projectId, r, id, new Date());
  const { rows } = await pool.query<InsertedRootRun>(insert.statement);
  return insert.created(rows[0]);
}

/**
 * createRootRun's insert of a run another process may have inserted already (a run sent to an
 * in-cluster worker before its insert, in-cluster/direct-runs.ts): the run and its job when this
 * inserted it, null when the row was there; not found when its workflow is not registered.
 */
export async function createRootRunIfAbsent(
  pool: pg.Pool,
  projectId: string,
  r: RunRequest,
  id: string,
  now: Date,
): Promise<CreatedRootRun | null> {
  const insert = insertRootRun(projectId, r, id, now);
  const { rows } = await pool.query<InsertedRootRun>({
    ...insert.statement,
    name: "spool_insert_root_run_if_absent",
    text: INSERT_ROOT_RUN_IF_ABSENT,
  });
  if (rows[0]) return insert.created(rows[0]);
  // Nothing inserted: the row was there (the insert waited for its commit, so this read sees it), or
  // the workflow is not registered.
  if (await executionExists(pool, id)) return null;
  return insert.created(undefined);
}

/** Whether a run with this id is in Postgres. */
export async function executionExists(pool: pg.Pool, id: string): Promise<boolean> {
  const { rows } = await pool.query({ name: "spool_execution_exists", text: EXECUTION_EXISTS, values: [id] });
  return rows.length > 0;
}
const EXECUTION_EXISTS = "SELECT 1 FROM executions WHERE id = $1::uuid";

/** A root run as inserted, with the job that runs it. */
export interface CreatedRootRun {
  execution: Execution;
  dispatch: DispatchRequest;
}
/** A root run as its insert returns it. */
export type InsertedRootRun = Execution & { laneLimited: boolean };

/**
 * createRootRun's statement (to send alone or with others), and what its row makes: the run and its
 * job, or the not-found error of an unregistered workflow.
 */
export function insertRootRun(projectId: string, r: RunRequest, id: string, now: Date) {
  const json = (v: unknown) => (v === null || v === undefined ? null : JSON.stringify(v));
  const input = JSON.stringify(r.input ?? {});
  const statement = {
    name: "spool_insert_root_run",
    text: INSERT_ROOT_RUN,
    values: [
      id,
      projectId,
      r.workflowId,
      r.deploymentId ?? null,
      input,
      r.concurrencyKey ?? null,
      r.stepKey ?? null,
      r.waitForSubworkflow ?? false,
      r.runTimeoutSeconds ?? null,
      r.runTimeoutSeconds ? new Date(now.getTime() + r.runTimeoutSeconds * 1000) : null,
      json(r.initialState),
      r.sessionId ?? null,
      r.userId ?? null,
      r.otelTraceparent ?? null,
      json(r.channelContext),
      now,
    ],
  };
  const created = (row: InsertedRootRun | undefined): CreatedRootRun => {
    if (!row) {
      throw notFound(
        "workflow",
        r.deploymentId ? `${r.workflowId}' in deployment '${r.deploymentId}` : r.workflowId,
      );
    }
    const { laneLimited, ...execution } = row;
    // The input as Postgres returned it (jsonb's form), which is what a start would read.
    const first: FirstRun | undefined =
      laneLimited || Buffer.byteLength(input) > MAX_FIRST_JOB_INPUT_BYTES
        ? undefined
        : {
            workflowId: execution.workflowId,
            queueName: execution.queueName,
            attempt: execution.attempt,
            lease: execution.lease,
            input: execution.input,
          };
    return { execution, dispatch: runDispatch(execution, first) };
  };
  return { statement, created };
}

/** The job that runs an execution in its current dispatch state, on its workflow's BullMQ queue. */
export const runDispatch = (
  e: Pick<Execution, "id" | "projectId" | "dispatchQueue" | "dispatchSeq">,
  first?: FirstRun,
): DispatchRequest => ({
  projectId: e.projectId,
  queueName: e.dispatchQueue,
  jobId: runJobId(e.id, e.dispatchSeq),
  data: {
    kind: "run",
    projectId: e.projectId,
    executionId: e.id,
    dispatchSeq: e.dispatchSeq,
    ...(first ? { first } : {}),
  },
});
