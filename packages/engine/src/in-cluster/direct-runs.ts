import type { Execution, pg, Worker } from "@spool/db";
import { Prisma } from "@spool/db";
import { isSpoolError, type Logger } from "@spool/shared";
import { CONSUMER_NAME } from "../dispatch/dispatcher.js";
import type { Engine } from "../engine.js";
import { claimOf } from "../execution/claim.js";
import {
  type CreatedRootRun,
  createRootRunIfAbsent,
  DEFAULT_QUEUE,
  type RunRequest,
  runDispatch,
} from "../execution/create-executions.js";
import { insertNewRunOn, mayGoBeforeInsert, type NewRun } from "../execution/deferred-start.js";
import type { RunsStartedWithoutJob, SentNewRun } from "../execution/executions.js";
import {
  CONSUMER_FRESH_MS,
  createRootRunsOnInClusterWorkers,
  unstartExecution,
} from "../execution/start-on-push-worker.js";
import { laneHasLimit } from "../execution/take-run.js";
import { InRounds } from "../util/in-rounds.js";
import { repeatEvery } from "../util/repeat.js";

// In-cluster runs without jobs. A new plain root run of a workflow an in-cluster worker process
// serves is inserted and started on that process by one group commit (its row names the process as
// holder, `push_holder`), then published on the process's channel: no BullMQ job, no queue round
// trips. What a job's lock gives is kept: a process that is gone (Redis no longer lists it) or
// frozen (its lease in Redis lapsed) has its runs handed to jobs by the scheduler (OrphanedJobs),
// and a live one hands over the runs named as its own that it does not hold.
//
// A new run whose caller waits for its finish (`POST …/run?wait=`) goes one step further: it is
// published to a process before it is inserted (NewRun), and the process inserts it, started, with
// its first step's write (execution/deferred-start.ts): one commit and one round trip less, on the
// path a waiting caller sees. The process inserts it within DEFERRED_START_MS of taking it; when the
// API has not seen it in Postgres NEW_RUN_INSERT_BOUND_MS after the send (or sooner, when its caller's
// wait must read it, and when the API stops), it inserts the same row itself, started on that process
// and held by it, which the process takes over: a lost message or a dead or frozen process then has
// it handed to its job as any held run, and a slow one runs nothing twice.

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

export const decodeStartedRun = (message: string): Execution => startedRunOf(JSON.parse(message));

function startedRunOf(row: Record<string, unknown>): Execution {
  for (const field of DATE_FIELDS) {
    const value = row[field];
    if (typeof value === "string") row[field] = new Date(value);
  }
  return row as unknown as Execution;
}

/** A new run as published to the worker process that is to insert it. */
export const encodeNewRun = (run: NewRun): string => JSON.stringify({ newRun: run });

/** What a process's run channel carries: a run started on it, or a new run for it to insert. */
export type DirectRun = { kind: "started"; run: Execution } | { kind: "new"; run: NewRun };

export function decodeDirectRun(message: string): DirectRun {
  const parsed = JSON.parse(message) as Record<string, unknown>;
  if (!("newRun" in parsed)) return { kind: "started", run: startedRunOf(parsed) };
  const run = parsed.newRun as NewRun & { createdAt: string };
  return { kind: "new", run: { ...run, createdAt: new Date(run.createdAt) } };
}

/**
 * How long a new run sent before its insert may go unfinished before its API inserts it itself (a
 * no-op when its process did; otherwise the process is gone, frozen or never got the message).
 */
export const NEW_RUN_INSERT_BOUND_MS = 1000;

/**
 * A run sent before its insert that its process will not run (no room, or it failed there), inserted
 * queued unless it is in Postgres already, then its job enqueued either way (a no-op for a job there).
 * Throws not found when its workflow is no longer registered.
 */
export async function insertSentRun(engine: Pick<Engine, "pool" | "dispatcher">, run: NewRun): Promise<void> {
  const created = await createRootRunIfAbsent(engine.pool, run.projectId, run.request, run.id, run.createdAt);
  await engine.dispatcher.dispatch([created?.dispatch ?? newRunDispatch(run)]);
}

/** The job of a sent run as inserted (its first dispatch, on its workflow's queue). */
export const newRunDispatch = (run: NewRun) =>
  runDispatch({ id: run.id, projectId: run.projectId, dispatchQueue: run.queueName, dispatchSeq: 0 });

/** SQLSTATE class of data exceptions: an insert that fails so fails again. */
const DATA_EXCEPTION = "22";
/** The longest the API waits between two tries of its own insert of a sent run. */
const MAX_INSERT_RETRY_MS = 30_000;

/** An in-cluster worker process that takes runs without jobs: its name and its worker row. */
interface Consumer {
  name: string;
  workerId: string;
}

/** A new run sent to a process before its insert: the API's side (see SentNewRun). */
interface Sent {
  run: NewRun;
  /** The process it was sent to. */
  to: Consumer;
  /** When the API's timer inserts it itself (ms since the epoch), unless it is in Postgres by then. */
  due: number;
  /** Failed tries of that insert. */
  tries: number;
  timer: NodeJS.Timeout | undefined;
  inserting: Promise<void> | undefined;
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
  /**
   * Of those, the ones whose new runs may be sent before their insert (registered, their lane
   * without a limit), with the processes that serve them and their lane.
   */
  private sendable = new Map<string, { consumers: Consumer[]; lane: string }>();
  /** Turns taken among a workflow's processes. */
  private turn = 0;
  /** New runs sent before their insert whose finish nobody has seen yet, by id. */
  private readonly unconfirmed = new Map<string, Sent>();
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
    // Nothing this API sent may be lost with it: what no process confirmed is inserted now.
    await Promise.allSettled([...this.unconfirmed.values()].map((sent) => this.insert(sent)));
  }

  serves(projectId: string, workflowId: string): boolean {
    return (
      !this.stopping && this.served.has(`${projectId} ${workflowId}`) && this.engine.dispatcher.reachable()
    );
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

  /** The processes new runs of this workflow are sent to before their insert, as of the last refresh. */
  sendsNewRunsTo(projectId: string, workflowId: string): string[] {
    return (this.sendable.get(`${projectId} ${workflowId}`)?.consumers ?? []).map((c) => c.name);
  }

  /**
   * Publishes a new run to a process that serves its workflow, to insert it with its first step (see
   * above). Null when it cannot go that way (not sent, or nobody got it): the caller inserts it.
   */
  async sendNew(projectId: string, request: RunRequest, id: string): Promise<SentNewRun | null> {
    const to = this.sendable.get(`${projectId} ${request.workflowId}`);
    if (this.stopping || !to || request.deploymentId || !mayGoBeforeInsert(request)) return null;
    // Redis is the only way to that process: without it the run is inserted queued (as in serves()).
    if (!this.engine.dispatcher.reachable()) return null;
    const consumer = to.consumers[this.turn++ % to.consumers.length]!;
    const run: NewRun = { id, projectId, request, queueName: to.lane, createdAt: new Date() };
    let received: number | undefined;
    try {
      received = await this.engine.dispatcher.publish(directRunsChannel(consumer.name), encodeNewRun(run));
    } catch (err) {
      // It may have been received all the same: sent, as far as anyone can tell (the API inserts it
      // when due, for that process).
      this.o.logger.warn({ err: String(err), execution_id: id }, "publishing a new run failed");
    }
    if (received === 0) return null;
    this.engine.metrics.runsCreated([
      { projectId, workflowId: request.workflowId, queueName: run.queueName },
    ]);
    const sent: Sent = {
      run,
      to: consumer,
      due: Date.now() + NEW_RUN_INSERT_BOUND_MS,
      tries: 0,
      timer: undefined,
      inserting: undefined,
    };
    this.unconfirmed.set(id, sent);
    this.insertLater(sent);
    return {
      inserted: () => this.insert(sent),
      finished: () => this.confirmed(sent),
    };
  }

  /** The API's own insert of a sent run, when due (tried again, less and less often, while it fails). */
  private insertLater(sent: Sent): void {
    sent.timer = setTimeout(
      () => {
        this.insert(sent).catch((err: unknown) => {
          this.o.logger.warn({ err: String(err), execution_id: sent.run.id }, "inserting a sent run failed");
          if (this.stopping || !this.unconfirmed.has(sent.run.id)) return;
          sent.tries++;
          sent.due = Date.now() + Math.min(NEW_RUN_INSERT_BOUND_MS * 2 ** sent.tries, MAX_INSERT_RETRY_MS);
          this.insertLater(sent);
        });
      },
      Math.max(0, sent.due - Date.now()),
    );
    sent.timer.unref();
  }

  /**
   * Inserts a sent run for the process it was sent to unless it is in Postgres already: once this
   * succeeded, it is. Held by that process, the row is what the process would have inserted, which it
   * takes over: an insert of the API's before the process's never runs a step twice. Throws not found
   * when its workflow is no longer registered; that, and an input Postgres refuses, are not tried
   * again.
   */
  private insert(sent: Sent): Promise<void> {
    sent.inserting ??= (async () => {
      await insertNewRunOn(this.engine.pool, sent.run, sent.to);
      this.confirmed(sent);
    })().catch((err: unknown) => {
      sent.inserting = undefined;
      const code = (err as { code?: unknown }).code;
      if (
        (isSpoolError(err) && err.type === "NOT_FOUND") ||
        (typeof code === "string" && code.startsWith(DATA_EXCEPTION))
      ) {
        this.confirmed(sent);
      }
      throw err;
    });
    return sent.inserting;
  }

  /** The run is in Postgres: no insert of its own is due. */
  private confirmed(sent: Sent): void {
    clearTimeout(sent.timer);
    this.unconfirmed.delete(sent.run.id);
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
    // Purpose: see above (inClusterWorkerFor's filter), with each workflow's lane (its latest
    // registration's; none when unregistered) and whether that lane has a limit. Locks: none. Result:
    // (project, workflow, process) rows.
    const rows = await this.engine.prisma.$queryRaw<
      {
        projectId: string;
        workflowId: string;
        consumer: string;
        workerId: string;
        lane: string | null;
        limited: boolean;
      }[]
    >(Prisma.sql`
      SELECT s.*, ${Prisma.raw(laneHasLimit('s."projectId"', "s.lane"))} AS limited FROM (
        SELECT DISTINCT w.project_id AS "projectId", f.workflow_id AS "workflowId", w.consumer_name AS consumer,
               w.id AS "workerId",
               (SELECT COALESCE(g.queue_name, ${DEFAULT_QUEUE}) FROM workflow_registrations g
                 WHERE g.project_id = w.project_id AND g.workflow_id = f.workflow_id AND g.archived_at IS NULL
                 ORDER BY g.updated_at DESC LIMIT 1) AS lane
          FROM workers w,
               jsonb_array_elements_text(CASE WHEN jsonb_typeof(w.capabilities -> 'workflow_ids') = 'array'
                                              THEN w.capabilities -> 'workflow_ids' ELSE '[]'::jsonb END)
                 AS f(workflow_id)
         WHERE w.mode = 'queue' AND w.status = 'online' AND w.consumer_name IS NOT NULL
           AND w.consumer_seen_at > now() - ${CONSUMER_FRESH_MS} * interval '1 millisecond') s`);
    this.served = new Set(rows.map((r) => `${r.projectId} ${r.workflowId}`));
    const sendable = new Map<string, { consumers: Consumer[]; lane: string }>();
    for (const r of rows) {
      if (r.lane === null || r.limited) continue;
      const key = `${r.projectId} ${r.workflowId}`;
      const to = sendable.get(key) ?? { consumers: [], lane: r.lane };
      to.consumers.push({ name: r.consumer, workerId: r.workerId });
      sendable.set(key, to);
    }
    this.sendable = sendable;
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
