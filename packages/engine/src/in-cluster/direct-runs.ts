import type { Execution, pg, Worker } from "@spool/db";
import { Prisma } from "@spool/db";
import type { Logger } from "@spool/shared";
import { CONSUMER_NAME } from "../dispatch/dispatcher.js";
import type { Engine } from "../engine.js";
import { claimOf } from "../execution/claim.js";
import { type CreatedRootRun, type RunRequest, runDispatch } from "../execution/create-executions.js";
import type { RunsStartedWithoutJob } from "../execution/executions.js";
import {
  CONSUMER_FRESH_MS,
  createRootRunsOnInClusterWorkers,
  unstartExecution,
} from "../execution/start-on-push-worker.js";
import { InRounds } from "../util/in-rounds.js";
import { repeatEvery } from "../util/repeat.js";

// In-cluster runs without jobs. A new plain root run of a workflow an in-cluster worker process
// serves is inserted and started on that process by one group commit (its row names the process as
// holder, `push_holder`), then published on the process's channel: no BullMQ job, no queue round
// trips. What a job's lock gives is kept: a process that is gone (Redis no longer lists it) or
// frozen (its lease in Redis lapsed) has its runs handed to jobs by the scheduler (OrphanedJobs),
// and a live one hands over the runs named as its own that it does not hold.

/** The Redis channel an in-cluster worker process takes its runs on. */
export const directRunsChannel = (consumer: string) => `spool:runs:${consumer}`;

/** Execution's Date fields, which JSON carries as strings. */
const DATE_FIELDS = [
  "slotWaitingSince",
  "deadlineAt",
  "createdAt",
  "updatedAt",
  "startedAt",
  "completedAt",
  "cancelledAt",
] as const satisfies readonly (keyof Execution)[];

/** A started run as published to its worker process. */
export const encodeStartedRun = (run: Execution): string => JSON.stringify(run);

export function decodeStartedRun(message: string): Execution {
  const row = JSON.parse(message) as Record<string, unknown>;
  for (const field of DATE_FIELDS) {
    const value = row[field];
    if (typeof value === "string") row[field] = new Date(value);
  }
  return row as unknown as Execution;
}

/** The most starts one round sends together (a group commit holds 32 statements, two per run). */
const MAX_STARTS_PER_ROUND = 16;

/**
 * The API side: starts new plain root runs on in-cluster worker processes and publishes them there.
 * A run no process has room for, or whose publish reached nobody (the process went away or is
 * reconnecting), goes the job's way.
 */
export class InClusterSender implements RunsStartedWithoutJob {
  /** `<project> <workflow>` served by processes that take runs without jobs, as of the last refresh. */
  private served = new Set<string>();
  private stopping = false;
  private refreshing: { stop(): Promise<void> } | undefined;
  private readonly starts = new InRounds(
    (runs: { projectId: string; request: RunRequest; id: string }[]) =>
      createRootRunsOnInClusterWorkers(this.engine.pool, runs),
    MAX_STARTS_PER_ROUND,
  );

  constructor(
    private readonly engine: Engine,
    private readonly o: { logger: Logger; refreshMs?: number },
  ) {}

  start(): void {
    this.engine.executions.addStarterWithoutJob(this);
    this.refreshing = repeatEvery(
      () => this.refresh(),
      this.o.refreshMs ?? 1000,
      (err) => this.o.logger.warn({ err: String(err) }, "in-cluster worker lookup failed"),
    );
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.engine.executions.removeStarterWithoutJob(this);
    await this.refreshing?.stop();
  }

  serves(projectId: string, workflowId: string): boolean {
    return !this.stopping && this.served.has(`${projectId} ${workflowId}`);
  }

  /**
   * Inserts the run and, in the same commit, starts it on the least loaded in-cluster worker process
   * with room, then publishes it there (not awaited: the caller is answered once the run is in).
   * When no process takes it, its job is enqueued as for any run.
   */
  async createAndStart(projectId: string, request: RunRequest, id: string): Promise<CreatedRootRun> {
    const { created, started } = await this.starts.run(projectId, { projectId, request, id });
    if (!started) {
      await this.engine.dispatcher.dispatch([created.dispatch]);
      return created;
    }
    // Counted here, where the run was started: the process it is sent to may never get it.
    this.engine.metrics.runStarted(started.execution);
    void this.send(started.execution, started.worker);
    return created;
  }

  /** Publishes a started run to its process; if nobody got it, gives it back to its job. */
  private async send(run: Execution, worker: Worker): Promise<void> {
    let received = 0;
    try {
      received = await this.engine.dispatcher.publish(
        directRunsChannel(worker.consumerName ?? ""),
        encodeStartedRun(run),
      );
    } catch (err) {
      this.o.logger.warn({ err: String(err), execution_id: run.id }, "publishing a run failed");
    }
    if (received > 0) return;
    // running → queued under the same dispatch (if still so started), then its job. Should either
    // fail, the run stays named as that process's: it hands it over itself, or the scheduler does.
    try {
      const back = await unstartExecution(this.engine.prisma, { executionId: run.id, claim: claimOf(run) });
      if (back) await this.engine.dispatcher.dispatch([runDispatch(back)]);
    } catch (err) {
      this.o.logger.warn({ err: String(err), execution_id: run.id }, "giving a run back failed");
    }
  }

  /** The workflows in-cluster worker processes that take runs without jobs serve now. */
  async refresh(): Promise<void> {
    // Purpose: see above (inClusterWorkerFor's filter). Locks: none. Result: (project, workflow) pairs.
    const rows = await this.engine.prisma.$queryRaw<{ projectId: string; workflowId: string }[]>(Prisma.sql`
      SELECT DISTINCT w.project_id AS "projectId", f.workflow_id AS "workflowId"
        FROM workers w,
             jsonb_array_elements_text(CASE WHEN jsonb_typeof(w.capabilities -> 'workflow_ids') = 'array'
                                            THEN w.capabilities -> 'workflow_ids' ELSE '[]'::jsonb END)
               AS f(workflow_id)
       WHERE w.mode = 'queue' AND w.status = 'online' AND w.consumer_name IS NOT NULL
         AND w.consumer_seen_at > now() - ${CONSUMER_FRESH_MS} * interval '1 millisecond'`);
    this.served = new Set(rows.map((r) => `${r.projectId} ${r.workflowId}`));
  }
}

// Purpose: this process takes runs without jobs on the worker's row, and is alive now (renewed every
// second). Params: worker, consumer name. Locks: the worker's row.
const ADVERTISE_CONSUMER = `
  UPDATE workers SET consumer_name = $2, consumer_seen_at = now() WHERE id = $1::uuid`;

/**
 * The worker side, every second: the registered worker `workerId` is this process, which takes runs
 * without jobs and is alive (for the APIs' choice); and its lease in Redis, which lapses after
 * `lockMs` unrenewed: the scheduler then takes the process for frozen and hands the runs it holds
 * to jobs (OrphanedJobs), as BullMQ does a job's whose lock expired. Postgres being away stops
 * neither, as it would not stop a job's lock renewals.
 */
export async function advertiseConsumer(
  engine: Pick<Engine, "pool" | "dispatcher">,
  workerId: string,
  lockMs: number,
): Promise<void> {
  await Promise.all([
    engine.dispatcher.renewConsumerLease(lockMs),
    engine.pool.query({
      name: "spool_advertise_consumer",
      text: ADVERTISE_CONSUMER,
      values: [workerId, CONSUMER_NAME],
    }),
  ]);
}

/** This process takes no more runs without jobs (every row that names it, re-registrations too). */
export async function withdrawConsumer(pool: pg.Pool): Promise<void> {
  // Purpose: see above. Params: consumer name. Locks: those worker rows.
  await pool.query(
    "UPDATE workers SET consumer_name = NULL, consumer_seen_at = NULL WHERE consumer_name = $1",
    [CONSUMER_NAME],
  );
}
