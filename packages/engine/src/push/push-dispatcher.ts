import type { Execution, Worker as WorkerRow } from "@spool/db";
import { Prisma } from "@spool/db";
import {
  FIRST_START_CLAIM,
  type Logger,
  type PushRequest,
  type SerializedError,
  type WireJournal,
} from "@spool/shared";
import { DelayedError, type Job, Worker } from "bullmq";
import { BULL_PREFIX, bullQueueName, type DispatchRequest, type JobData } from "../dispatch/dispatcher.js";
import { CONSUMER_NAME } from "../dispatch/orphaned-jobs.js";
import type { Engine } from "../engine.js";
import { claimOf } from "../execution/claim.js";
import { type CreatedRootRun, type RunRequest, runDispatch } from "../execution/create-executions.js";
import { insertNewRunOnPushWorker, mayGoBeforeInsert, type NewRun } from "../execution/deferred-start.js";
import type { JournalRows } from "../execution/journal-store.js";
import {
  createRootRunsOnPushWorkers,
  markPushed,
  type PushStart,
  pushableWorkers,
  type RootRunToPush,
  startOnPushWorker,
  startQueuedOnPushWorkers,
  startQueuedOnPushWorkersWaiting,
  unstartExecution,
} from "../execution/start-on-push-worker.js";
import { maxResultBytes } from "../runtime/result-size.js";
import { showRunningAfterDelay } from "../traces/running-span.js";
import { InRounds } from "../util/in-rounds.js";
import { inJsonbOrder } from "../util/jsonb-order.js";
import { repeatEvery } from "../util/repeat.js";
import { recordPushOutcome, servedByAnyPushWorker, servedElsewhere } from "../workers/workers.js";
import { handOverHeldRuns } from "./held-runs.js";
import { type PushOutcome, PushSender, sendCancel } from "./push-client.js";

/** Why a push's watch stops; abort() without a reason builds a DOMException and its stack every push. */
const PUSH_OVER = new Error("the push is over");

type RunJob = Extract<JobData, { kind: "run" }>;

/** A run started on a push worker, as the push needs it. */
type StartedRun = { execution: Execution; worker: WorkerRow; journal?: JournalRows };

/** What a push carries of its run (PushRequest), from its row or from a run not inserted yet. */
type PushedFields = Pick<
  Execution,
  | "id"
  | "workflowId"
  | "deploymentId"
  | "input"
  | "parentExecutionId"
  | "rootExecutionId"
  | "stepKey"
  | "attempt"
  | "createdAt"
  | "sessionId"
  | "userId"
  | "otelTraceparent"
  | "otelSpanId"
  | "initialState"
  | "runTimeoutSeconds"
  | "channelContext"
  | "dispatchSeq"
  | "lease"
  | "queueName"
>;

/**
 * A workflow whose new runs may be pushed before their insert (pushBeforeInsert), as of the last
 * refresh: registered (its latest registration's queue and deployment), on a lane without a limit,
 * with the online push workers not paused that serve it and prove the push's claim on their calls
 * (capabilities.spool_claims: another API replica can tell their calls for a run not in yet), and
 * the runs each was running then.
 */
interface PushableWorkflow {
  lane: string;
  deploymentId: string;
  workers: { worker: WorkerRow; running: number; heldThen: number }[];
}

export interface PushDispatcherOptions {
  logger: Logger;
  /** How often the queues that push workers serve are looked up. */
  refreshMs?: number;
  /** Longest a worker may take to answer a push. */
  pushTimeoutMs?: number;
  /**
   * Most jobs one queue consumer holds at once (each is a run out on a remote worker, or one waiting
   * for room); it takes no more than the queue's online push workers can run together.
   */
  concurrency?: number;
  /** How long a held job's lock lives without renewal: a dead dispatcher's runs are adopted after it. */
  lockDurationMs?: number;
  /** Push only these projects' runs (default: every project's). */
  projectIds?: string[];
  /**
   * How long a run that names this process as its holder may go unheld here before it is handed
   * to its job (a start whose answer was lost). Well past the push timeout: a run is held from
   * before its push until it leaves its worker.
   */
  unheldGraceMs?: number;
}

/** How long a held run is watched per round before the loop looks again (announcements wake it sooner). */
const HOLD_RECHECK_MS = 15_000;
/** The most starts one round sends together (a group commit holds 32 statements). */
const MAX_STARTS_PER_ROUND = 16;
/** What a push worker without max_concurrent_executions counts for, and the most one consumer holds. */
const UNLIMITED_CAPACITY = 1000;
/** A run of a workflow no push worker serves goes back to the queue for an in-cluster worker. */
const NOT_PUSHED_HERE_DELAY_MS = 250;
/** See PushDispatcherOptions.unheldGraceMs. */
const UNHELD_GRACE_MS = 60_000;
/** How often a run whose push workers are all away is looked at again. */
const AWAY_DELAY_MS = 5000;

/**
 * Pushes runs to remote workers (spec/worker-protocol.md). It consumes the BullMQ queues that push
 * workers' workflows run on, like an in-cluster worker does, and for each run job: starts the run
 * on a push worker with room, POSTs it to the worker's /execute, and keeps the job (and with it the
 * queue's concurrency slot, which holds across every consumer of the queue) until the run leaves
 * that worker. A job BullMQ hands back because the dispatcher that held it died is adopted, never
 * pushed again, while the run's worker is online: its step functions must not run twice.
 *
 * A new plain root run of a workflow a push worker serves, created in this process, takes no job
 * at all when a push worker has room (`createAndStart`): it is inserted and started by one group
 * commit, pushed, and held here, its row naming this process (`push_holder`); to a worker whose
 * calls prove the push's claim, the push leaves while that insert is on its way (pushBeforeInsert).
 * Should this process stop, it hands such runs to jobs; should it die, the scheduler does
 * (OrphanedJobs), and a dispatcher that takes the job adopts or restarts the run as above.
 */
export class PushDispatcher {
  private readonly consumers = new Map<string, Worker<JobData, string>>();
  private stopping = false;
  /** Runs started on a push worker whose push has not been answered yet. */
  private pushing = 0;
  private refreshing: { stop(): Promise<void> } | undefined;
  /**
   * A project's one-statement starts, in rounds: those that come in one turn, or while a round is
   * under way, go together, as one group commit whose statements see each other's starts (one round
   * trip for all). Started apart, two would often pick the same worker, and the one that found its
   * row locked (SKIP LOCKED) would take a slower path; one at a time, starts would be capped at one
   * per round trip.
   */
  private readonly quickStarts = new InRounds(
    (jobs: RunJob[]) => startQueuedOnPushWorkers(this.engine.pool, jobs),
    MAX_STARTS_PER_ROUND,
  );
  /**
   * The waiting starts of a project, in rounds too: each round is a transaction on a connection of
   * its own that may wait for the worker's row (up to 100 ms), so one at a time per project in this
   * process, however many jobs a round of quick starts left to it.
   */
  private readonly waitingStarts = new InRounds(
    (jobs: (RunJob & { pushHolder?: string })[]) => startQueuedOnPushWorkersWaiting(this.engine.pool, jobs),
    MAX_STARTS_PER_ROUND,
  );
  /** Queues this process found shared with workflows only in-cluster workers serve (warned once). */
  private readonly sharedQueues = new Set<string>();
  /** `<project> <workflow>` of the workflows online push workers serve, as of the last refresh. */
  private servedWorkflows = new Set<string>();
  /**
   * New runs inserted and started together, in rounds per project as the job path's starts are:
   * one group commit per round, each start counting those before it.
   */
  private readonly newRunStarts = new InRounds(
    (runs: RootRunToPush[]) => createRootRunsOnPushWorkers(this.engine.pool, runs),
    MAX_STARTS_PER_ROUND,
  );
  /** Runs this process started and pushed without a job, as started. */
  private readonly heldWithoutJob = new Map<string, Execution>();
  /** `<project> <workflow>` of the workflows whose new runs may be pushed before their insert. */
  private pushable = new Map<string, PushableWorkflow>();
  /** When `pushable` was looked up (ms since the epoch). */
  private pushableAt = 0;
  /** Runs this process pushed before their insert and holds still (until they leave), by push worker. */
  private readonly heldPushedBeforeInsert = new Map<string, number>();
  /** Every push leaves through it: a busy Spool SDK worker's pushes go in batches. */
  private readonly pushes = new PushSender();
  /** Batch requests whose failure has been counted against their worker (see firstOfItsRequest). */
  private readonly failedRequestsCounted = new WeakSet<object>();
  /** Jobs of runs handed over while Redis would not take them: enqueued again each refresh. */
  private readonly handOversDue = new Map<string, DispatchRequest>();

  constructor(
    private readonly engine: Engine,
    private readonly o: PushDispatcherOptions,
  ) {}

  /** How often the workers are looked up (see PushDispatcherOptions.refreshMs). */
  private get refreshMs(): number {
    return this.o.refreshMs ?? 1000;
  }

  start(): void {
    // Redis lists this process as alive until it lets go, also while its consumers close: the
    // scheduler takes that for the liveness of the runs it holds without jobs, too.
    this.engine.dispatcher.announceConsumer();
    // Tried before any other way of starting runs without jobs (in-cluster/direct-runs.ts).
    this.engine.executions.addStarterWithoutJob(this, { first: true });
    this.refreshing = repeatEvery(
      () => this.refresh(),
      this.refreshMs,
      (err) => this.o.logger.warn({ err: String(err) }, "push queue lookup failed"),
    );
  }

  /**
   * Stops taking jobs and new runs. Pushes under way are answered first (bounded by the push
   * timeout), so no run is left started but never pushed; held runs stay with their workers, and
   * their jobs, whose locks now lapse, are adopted by another dispatcher. Runs held without a job
   * get their jobs now, for another dispatcher to adopt.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    this.engine.executions.removeStarterWithoutJob(this);
    await this.refreshing?.stop();
    const deadline = Date.now() + (this.o.pushTimeoutMs ?? 10_000) + 1000;
    while (this.pushing > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await Promise.allSettled([...this.consumers.values()].map((w) => w.close(true)));
    this.consumers.clear();
    for (const [id, run] of this.heldWithoutJob) this.handOversDue.set(id, runDispatch(run));
    await this.enqueueHandOvers();
  }

  /** Whether a new plain root run of this workflow may go to a push worker without a job. */
  serves(projectId: string, workflowId: string): boolean {
    return !this.stopping && this.servedWorkflows.has(`${projectId} ${workflowId}`);
  }

  /**
   * Pushes a plain root run before its insert when it can (pushBeforeInsert). Otherwise inserts it
   * and, in the same commit, starts it on the least loaded push worker with room, then pushes it
   * without a job (not awaited: the caller is answered once the run is in). When that start takes
   * nothing, a start that waits for the worker's row is tried as for a job's first try; when that
   * takes nothing either, the run's job is enqueued as for any run.
   */
  async createAndStart(projectId: string, request: RunRequest, id: string): Promise<CreatedRootRun> {
    const pushed = this.pushBeforeInsert(projectId, request, id);
    if (pushed) return pushed;
    const { created, started } = await this.newRunStarts.run(projectId, {
      projectId,
      request,
      id,
      pushHolder: CONSUMER_NAME,
    });
    const job = created.dispatch.data;
    // As for a job's first try (quickStart): another API replica's round may hold the worker's row.
    // The run is in: whatever fails from here, its job must be enqueued.
    const startedAfterWait =
      started ??
      (job.kind === "run" && job.first
        ? await this.waitingStarts
            .run(projectId, { ...job, pushHolder: CONSUMER_NAME })
            .catch((err: unknown) => {
              this.o.logger.warn({ err: String(err), execution_id: id }, "waiting start failed");
              return null;
            })
        : null);
    if (startedAfterWait) void this.pushWithoutJob(startedAfterWait);
    else await this.engine.dispatcher.dispatch([created.dispatch]);
    return created;
  }

  /**
   * A new run pushed to a push worker at once, while its insert (started on that worker, held here:
   * what createAndStart's statement leaves) is on its way: the insert's round trip and commit overlap
   * the push instead of coming before it. The worker's calls that come before the insert is done wait
   * for it here (PushedRuns.expectInsert); another API replica reads the run again briefly, then
   * answers 404, and the worker calls again under the run's claim for as long as its client retries,
   * unless the run is cancelled (remote-runs.ts, runner/http-host.ts). Null when the run cannot go
   * this way (the look-up is stale, no worker has room, a deployment named, a large input):
   * createAndStart's statement then.
   *
   * The worker is chosen here, among those that served the workflow at the last look-up, by the runs
   * each ran then and the runs pushed this way from here since: a soft bound, unlike the statement's
   * count under the worker's lock. The worker's own bound is the hard one: a worker at capacity
   * answers 429, and the run goes back to its queue as after any push not taken. An insert that fails
   * (the workflow archived since the look-up, Postgres away) fails the request, and the worker is
   * told to cancel the run: its first step may have run, as a process that inserts a run with its
   * first step (deferred-start.ts) may have run it for an insert that then fails.
   */
  private pushBeforeInsert(
    projectId: string,
    request: RunRequest,
    id: string,
  ): Promise<CreatedRootRun> | null {
    // A look-up that has failed for a while may no longer say who serves what: the statement decides.
    if (this.stopping || Date.now() - this.pushableAt > 3 * this.refreshMs) return null;
    const to = this.pushable.get(`${projectId} ${request.workflowId}`);
    if (!to || request.deploymentId || !mayGoBeforeInsert(request)) return null;
    const worker = this.roomiest(to);
    if (!worker) return null;
    // Of the registration the push names (as looked up), so that the row is what the push says.
    const run: NewRun = {
      id,
      projectId,
      request: { ...request, deploymentId: to.deploymentId },
      queueName: to.lane,
      createdAt: new Date(),
    };
    const timeoutMs = this.o.pushTimeoutMs ?? 10_000;
    this.countHeld(worker.id, 1);
    let released = false;
    const release = () => {
      if (!released) this.countHeld(worker.id, -1);
      released = true;
    };
    // Counted from now until the push is answered and its run marked pushed (pushAndHold): stop()
    // waits for it, so no run is handed to its job before its push arrived.
    this.pushing++;
    const push = this.pushes
      .send(worker, pushBodyOf(newRunAsPushed(run, to.deploymentId), worker, EMPTY_JOURNAL), timeoutMs)
      .then((outcome) => {
        if (outcome.kind !== "accepted") this.passOver(worker.id);
        return outcome;
      });
    const inserted = insertNewRunOnPushWorker(this.engine.pool, run, worker.id, CONSUMER_NAME)
      .catch(async (err: unknown) => {
        // An insert whose outcome is unknown (its connection lost after the commit) counts if the row
        // is there: cancelling the worker would then hand the run back, to run its steps again.
        const found = await this.engine.prisma.execution.findUnique({ where: { id } }).catch(() => null);
        if (found) return found;
        throw err;
      })
      .then(
        (execution) => {
          // Before the worker's waiting calls go on: they find the run known here, and its watch
          // (pushAndHold's, registered at once) sees every transition they make.
          void this.pushWithoutJob({ execution, worker }, push).finally(release);
          return { execution, dispatch: runDispatch(execution) };
        },
        (err: unknown) => {
          release();
          // Unless it said no (429, another worker id), the worker may have the run: a push whose
          // answer timed out may have reached it.
          void push
            .then(
              (outcome) =>
                outcome.kind !== "busy" && outcome.kind !== "mismatch" && sendCancel(worker, id, timeoutMs),
            )
            .finally(() => this.pushing--);
          throw err;
        },
      );
    this.engine.pushedRuns.expectInsert(id, inserted);
    return inserted;
  }

  /**
   * The worker with the most room for a run pushed before its insert, if one has room (see above);
   * of equals, one at random (replicas that looked up the same counts spread their runs).
   */
  private roomiest(to: PushableWorkflow): WorkerRow | undefined {
    let best: { worker: WorkerRow; load: number } | undefined;
    let equals = 0;
    for (const { worker, running, heldThen } of to.workers) {
      const held = this.heldPushedBeforeInsert.get(worker.id) ?? 0;
      // Others' runs as of the look-up, and this process's now.
      const load = Math.max(0, running - heldThen) + held;
      if (worker.maxConcurrentExecutions !== null && load >= worker.maxConcurrentExecutions) continue;
      if (!best || load < best.load) {
        best = { worker, load };
        equals = 1;
      } else if (load === best.load && Math.random() * ++equals < 1) {
        best = { worker, load };
      }
    }
    return best?.worker;
  }

  private countHeld(workerId: string, by: number): void {
    const held = (this.heldPushedBeforeInsert.get(workerId) ?? 0) + by;
    if (held > 0) this.heldPushedBeforeInsert.set(workerId, held);
    else this.heldPushedBeforeInsert.delete(workerId);
  }

  /**
   * Pushes a run started without a job and holds it until it leaves its worker. A push the worker
   * does not take gives the run back to the queue, with its job; anything that goes wrong, or this
   * process stopping, hands the run to its job, which decides from the run as stored (adopt it, or
   * start it again under a new lease). `sent`: the run's push, sent before its insert.
   */
  private async pushWithoutJob(started: StartedRun, sent?: Promise<PushOutcome>): Promise<void> {
    const id = started.execution.id;
    // The job of the run's current dispatch (a start keeps the dispatch sequence).
    const job = runDispatch(started.execution);
    this.heldWithoutJob.set(id, started.execution);
    try {
      // A push on its way is seen through: its job must know whether the worker has the run.
      if (this.stopping && !sent) {
        this.handOversDue.set(id, job);
      } else if (!(await this.pushAndHold(started, true, sent))) {
        if (await this.unstart(started.execution)) this.handOversDue.set(id, job);
      }
    } catch (err) {
      this.o.logger.warn(
        { err: String(err), execution_id: id },
        "push without a job failed; its job takes over",
      );
      this.handOversDue.set(id, job);
    } finally {
      this.heldWithoutJob.delete(id);
    }
    await this.enqueueHandOvers();
  }

  /**
   * Enqueues the jobs of runs handed over, together (each enqueue is bounded); those Redis would not
   * take stay due for the next try.
   */
  private async enqueueHandOvers(): Promise<void> {
    await Promise.all(
      [...this.handOversDue].map(async ([id, job]) => {
        if ((await this.engine.dispatcher.dispatch([job])) === 1) this.handOversDue.delete(id);
      }),
    );
  }

  /**
   * Consumers for every (project, queue) a workflow some online push worker serves runs on. Each
   * takes at most as many jobs at once as those workers can run together: a job it holds is out of
   * reach of in-cluster workers on the same queue.
   */
  async refresh(): Promise<void> {
    // Purpose: the queues to consume, the push capacity behind each and the workflows served there.
    // Locks: none. Result: one row per (project, queue); a worker without a limit counts as
    // UNLIMITED_CAPACITY.
    const rows = await this.engine.prisma.$queryRaw<
      { projectId: string; queue: string; capacity: number; workflows: string[] }[]
    >(
      Prisma.sql`
      WITH served AS (
        SELECT DISTINCT r.project_id, COALESCE(r.queue_name, 'default') AS queue, r.workflow_id,
               w.id AS worker_id, COALESCE(w.max_concurrent_executions, ${UNLIMITED_CAPACITY}) AS capacity
        FROM workers w JOIN workflow_registrations r
          ON r.project_id = w.project_id
         AND w.capabilities -> 'workflow_ids' @> jsonb_build_array(r.workflow_id)
        WHERE w.mode = 'push' AND w.status = 'online')
      SELECT s.project_id AS "projectId", s.queue, array_agg(DISTINCT s.workflow_id) AS workflows,
             (SELECT SUM(d.capacity) FROM (SELECT DISTINCT c.worker_id, c.capacity FROM served c
                                            WHERE c.project_id = s.project_id AND c.queue = s.queue) d
             )::int AS capacity
      FROM served s
      GROUP BY s.project_id, s.queue`,
    );
    await this.enqueueHandOvers();
    // Runs this process started but does not hold: a start whose answer was lost (the connection
    // dropped after its commit) left the run running, named as held here, with nobody pushing it.
    await handOverHeldRuns(this.engine.pool, this.engine.dispatcher, CONSUMER_NAME, {
      notUpdatedSince: new Date(Date.now() - (this.o.unheldGraceMs ?? UNHELD_GRACE_MS)),
      except: this.heldWithoutJob,
    });
    const wanted = new Set<string>();
    const served = new Set<string>();
    for (const { projectId, queue, capacity, workflows } of rows) {
      if (this.o.projectIds && !this.o.projectIds.includes(projectId)) continue;
      for (const workflowId of workflows) served.add(`${projectId} ${workflowId}`);
      const name = bullQueueName(projectId, queue);
      wanted.add(name);
      const concurrency = Math.max(1, Math.min(capacity, this.o.concurrency ?? UNLIMITED_CAPACITY));
      const existing = this.consumers.get(name);
      if (existing) {
        if (existing.concurrency !== concurrency) existing.concurrency = concurrency;
        continue;
      }
      if (this.stopping) return;
      const consumer = new Worker<JobData, string>(name, (job, token) => this.process(job, token), {
        connection: this.engine.dispatcher.workerConnection(),
        prefix: BULL_PREFIX,
        // A dead API's held jobs go back to the queue at once (OrphanedJobs), for another to adopt.
        name: CONSUMER_NAME,
        concurrency,
        lockDuration: this.o.lockDurationMs ?? 30_000,
        stalledInterval: this.o.lockDurationMs ?? 30_000,
        maxStalledCount: 1_000_000,
      });
      consumer.on("error", (err) => this.o.logger.warn({ err: err.message, queue }, "push consumer error"));
      consumer.on("failed", (job, err) =>
        this.o.logger.warn({ err: err.message, job_id: job?.id, queue }, "push job failed"),
      );
      this.consumers.set(name, consumer);
      this.o.logger.info({ project_id: projectId, queue, concurrency }, "pushing runs of queue");
    }
    // No online push worker serves these any more: leave their jobs to the queue (as with no
    // in-cluster worker) instead of taking them with nowhere to push. Held runs finish first.
    for (const [name, consumer] of this.consumers) {
      if (wanted.has(name)) continue;
      this.consumers.delete(name);
      void consumer.close().catch(() => {});
      this.o.logger.info({ queue: name }, "no push worker serves the queue now; stopped taking its runs");
    }
    this.servedWorkflows = served;
    this.pushable = await this.pushableWorkflows();
    this.pushableAt = Date.now();
  }

  /** See PushableWorkflow. */
  private async pushableWorkflows(): Promise<Map<string, PushableWorkflow>> {
    // This process's runs as the look-up begins: the running counts include those inserted by then.
    const heldThen = new Map(this.heldPushedBeforeInsert);
    const pushable = new Map<string, PushableWorkflow>();
    for (const { projectId, workflowId, lane, deploymentId, worker, running } of await pushableWorkers(
      this.engine.prisma,
    )) {
      if (this.o.projectIds && !this.o.projectIds.includes(projectId)) continue;
      const key = `${projectId} ${workflowId}`;
      const to = pushable.get(key) ?? { lane, deploymentId, workers: [] };
      to.workers.push({ worker, running, heldThen: heldThen.get(worker.id) ?? 0 });
      pushable.set(key, to);
    }
    return pushable;
  }

  /** A worker that did not take a push gets no run pushed before its insert until the next refresh. */
  private passOver(workerId: string): void {
    for (const to of this.pushable.values()) to.workers = to.workers.filter((w) => w.worker.id !== workerId);
  }

  private async process(job: Job<JobData, string>, token?: string): Promise<string> {
    const data = job.data;
    if (data.kind === "timer") {
      return (await this.engine.executions.fireTimer(data.waitId)) ? "timer fired" : "timer not due";
    }
    for (let round = 0; ; round++) {
      // The common case, the job's run still queued and a push worker with room, starts in one
      // statement; anything else reads the run first.
      const quick = round === 0 ? await this.quickStart(data) : null;
      const started = quick ? ({ status: "started", ...quick } as const) : await this.startAfterRead(data);
      if (started.status === "stale" || started.status === "adopted") return started.status;
      // Its lane's partition is full: the run that frees a slot dispatches it again.
      if (started.status === "slot_wait") return "waiting for a slot";
      if (started.status === "none") return this.notPushedHere(job, token, started.run);
      if (started.status === "full") {
        await this.waitForRoom(round, started.retryAt);
        continue;
      }
      if (await this.pushAndHold(started, false)) return "pushed";
      // Back to queued under this job's dispatch: the next round pushes it (no attempt used).
      if (!(await this.unstart(started.execution))) return "stale";
    }
  }

  /**
   * Pushes a run just started on a push worker and, when the worker takes it, holds it until it
   * leaves that worker (true). False when the worker did not take it: the run is still started, for
   * the caller to give back. `withoutJob`: no job holds the run (see hold).
   */
  private async pushAndHold(
    started: StartedRun,
    withoutJob: boolean,
    sent?: Promise<PushOutcome>,
  ): Promise<boolean> {
    const { execution, worker, journal } = started;
    this.engine.metrics.runStarted(execution);
    // Watched from now, as started (not read again). The worker routes may act on it as started
    // (pushedRuns) from now too: the worker may report before its answer to the push arrives.
    const stopWatching = new AbortController();
    const leaves = this.engine.executions.untilLeaves(execution.id, execution.lease, HOLD_RECHECK_MS, {
      started: execution,
      signal: stopWatching.signal,
    });
    leaves.catch(() => {}); // awaited by hold() only if the push is taken
    this.engine.pushedRuns.add(execution);
    let outcome: PushOutcome;
    try {
      // A push sent before its insert was counted as it left (pushBeforeInsert).
      if (!sent) this.pushing++;
      try {
        outcome = await (sent ??
          this.pushes.send(
            worker,
            await this.pushBody(execution, worker, journal),
            this.o.pushTimeoutMs ?? 10_000,
          ));
        // The worker has the run now: a dispatcher that adopts this job later must only wait.
        if (outcome.kind === "accepted") await markPushed(this.engine.pool, claimOf(execution), execution.id);
      } finally {
        this.pushing--;
      }
      this.engine.metrics.pushed(outcome.kind);
      if (this.firstOfItsRequest(outcome)) await recordPushOutcome(this.engine.prisma, worker, outcome.kind);
      if (outcome.kind === "accepted") {
        await this.hold(execution, worker, leaves, withoutJob);
        return true;
      }
    } finally {
      this.engine.pushedRuns.remove(execution);
      stopWatching.abort(PUSH_OVER);
    }
    this.o.logger.warn(
      {
        execution_id: execution.id,
        worker_id: worker.id,
        outcome: outcome.kind,
        ...("reason" in outcome ? { reason: outcome.reason } : {}),
      },
      "push not taken; trying again",
    );
    return false;
  }

  /**
   * Whether this outcome is the first of its request's: a batch that failed whole fails each of its
   * pushes, but is one failure of the worker (its backoff grows by one, not by the batch's size).
   */
  private firstOfItsRequest(outcome: PushOutcome): boolean {
    if (outcome.kind !== "failed" || !outcome.request) return true;
    if (this.failedRequestsCounted.has(outcome.request)) return false;
    this.failedRequestsCounted.add(outcome.request);
    return true;
  }

  /** running → queued under the same dispatch sequence, if the run is still so started. */
  private async unstart(execution: Execution): Promise<boolean> {
    const back = await unstartExecution(this.engine.prisma, {
      executionId: execution.id,
      claim: claimOf(execution),
    });
    return back !== null;
  }

  /**
   * The one-statement start (in a round), and for a new root run on a lane without a limit
   * (`first`, what most jobs are) a second one that waits for the worker's row (at most 100 ms):
   * with several API replicas pushing to the same worker, the first often finds it locked by another
   * replica's start. The slower path it would take instead holds that row for a whole transaction,
   * and every other start then queues behind it (measured: lock waits of 85 ms on average).
   */
  private async quickStart(data: RunJob) {
    return (
      (await this.quickStarts.run(data.projectId, data)) ??
      (data.first ? await this.waitingStarts.run(data.projectId, data) : null)
    );
  }

  /**
   * The run as stored decides: a stale job does nothing; a run whose push worker took it from a
   * dispatcher that died is adopted (its worker runs it now); if the push may never have left, it is
   * started again (the new lease fences any copy).
   */
  private async startAfterRead(
    data: RunJob,
  ): Promise<
    | Exclude<PushStart, { status: "none" | "stale" }>
    | { status: "none"; run: Execution }
    | { status: "stale" }
    | { status: "adopted" }
  > {
    const run = await this.engine.executions.row(data.executionId);
    if (
      !run ||
      run.dispatchSeq !== data.dispatchSeq ||
      (run.status !== "queued" && run.status !== "running")
    ) {
      return { status: "stale" };
    }
    const holder = run.status === "running" && run.workerId ? await this.workerRow(run.workerId) : null;
    if (holder?.mode === "push" && holder.status === "online" && run.pushedLease === run.lease) {
      this.o.logger.info(
        { execution_id: run.id, worker_id: holder.id },
        "adopted a pushed run whose dispatcher went away; waiting for its worker",
      );
      await this.hold(run, holder);
      return { status: "adopted" };
    }
    const started = await startOnPushWorker(this.engine, { execution: run });
    return started.status === "none" ? { status: "none", run } : started;
  }

  /**
   * Keeps the job until the run leaves the worker it was pushed to. When it left because it was
   * cancelled or timed out, the worker is told to stop it. `firstRound`: a watch begun earlier.
   * `withoutJob`: no job holds the run; stopping, this process goes on watching it (its job, which
   * stop() enqueues, is adopted elsewhere) instead of keeping a job from completing.
   */
  private async hold(
    run: Execution,
    worker: WorkerRow,
    firstRound?: Promise<Execution>,
    withoutJob = false,
  ): Promise<void> {
    const runningSpan = showRunningAfterDelay(this.engine.traces, run, (err) =>
      this.o.logger.warn({ err: String(err), execution_id: run.id }, "span sync failed"),
    );
    let watching = firstRound;
    try {
      for (;;) {
        const now = await (watching ??
          this.engine.executions.untilLeaves(run.id, run.lease, HOLD_RECHECK_MS));
        watching = undefined;
        if (now.status === "running" && now.lease === run.lease) {
          // Shutting down: never let BullMQ complete the job of a run still out on its worker. The
          // job stays active until its lock lapses, and another dispatcher adopts it.
          if (this.stopping && !withoutJob) await new Promise<never>(() => {});
          continue;
        }
        const timedOut =
          now.status === "failed" && (now.error as SerializedError | null)?.name === "RunTimeoutError";
        if (now.status === "cancelled" || timedOut) {
          void sendCancel(worker, run.id, this.o.pushTimeoutMs ?? 10_000);
        }
        return;
      }
    } finally {
      await runningSpan.settle();
    }
  }

  /**
   * No online push worker serves the run's workflow. If another online worker does (an in-cluster
   * one on this queue), the job goes back to the queue untouched for it; while a push worker that
   * serves it is away (written off, restarting), it waits for it; if no worker ever served it, the
   * run fails with WorkflowNotLoadedError, as an in-cluster worker would fail it.
   */
  private async notPushedHere(job: Job<JobData, string>, token: string | undefined, run: Execution) {
    const elsewhere = await servedElsewhere(this.engine.prisma, run.projectId, run.workflowId, null);
    if (elsewhere) this.warnSharedQueue(run);
    if (elsewhere || (await servedByAnyPushWorker(this.engine.prisma, run.projectId, run.workflowId))) {
      await job.moveToDelayed(Date.now() + (elsewhere ? NOT_PUSHED_HERE_DELAY_MS : AWAY_DELAY_MS), token);
      throw new DelayedError();
    }
    const started = await this.engine.executions.start(run.id, run.dispatchSeq, null);
    if (started.status !== "started") return "stale";
    await this.engine.executions.notLoaded(started.execution, claimOf(started.execution), null);
    return "not_loaded";
  }

  /**
   * Every consumer of a BullMQ queue takes its jobs: on a queue shared by push-served and
   * in-cluster-only workflows, this dispatcher and the in-cluster workers take each other's runs and
   * put them back, a quarter of a second to a second each time. Said once per queue, with the cure.
   */
  private warnSharedQueue(run: Execution): void {
    const key = `${run.projectId}/${run.dispatchQueue}`;
    if (this.sharedQueues.has(key) || this.sharedQueues.size >= 10_000) return;
    this.sharedQueues.add(key);
    this.o.logger.warn(
      { project_id: run.projectId, queue: run.dispatchQueue, workflow_id: run.workflowId },
      "this queue holds workflows that only in-cluster workers serve and workflows that push workers serve: " +
        "each kind takes the other's runs and hands them back, which delays them; give them queues of their own",
    );
  }

  /** Every push worker of the workflow is full or paused: look again soon (sooner while it is new). */
  private async waitForRoom(round: number, retryAt: Date | null): Promise<void> {
    const backoff = Math.min(1000, 50 * 2 ** Math.min(round, 5));
    const ms = retryAt ? Math.max(backoff, retryAt.getTime() - Date.now()) : backoff;
    await new Promise((resolve) => setTimeout(resolve, ms));
  }

  private workerRow(id: string) {
    return this.engine.prisma.worker.findUnique({ where: { id } });
  }

  /** The protocol's push body (unknown values null) plus Spool's claim, and the journal when read. */
  private async pushBody(e: Execution, worker: WorkerRow, journal?: JournalRows): Promise<PushRequest> {
    const rootId = e.rootExecutionId ?? e.id;
    const root =
      rootId === e.id
        ? e
        : await this.engine.prisma.execution.findUnique({
            where: { id: rootId },
            select: { workflowId: true },
          });
    return pushBodyOf(e, worker, journal, root?.workflowId);
  }
}

/** A new run's journal: nothing stored yet (pushed with it, the worker reads none). */
const EMPTY_JOURNAL: JournalRows = { steps: [], waits: [] };

/** The push of a run: `rootWorkflowId` is its root's workflow, when it is not its own root. */
function pushBodyOf(
  e: PushedFields,
  worker: WorkerRow,
  journal: JournalRows | undefined,
  rootWorkflowId?: string,
): PushRequest {
  return {
    worker_id: worker.id,
    execution_id: e.id,
    workflow_id: e.workflowId,
    deployment_id: e.deploymentId,
    payload: e.input,
    parent_execution_id: e.parentExecutionId,
    root_execution_id: e.rootExecutionId ?? e.id,
    root_workflow_id: rootWorkflowId ?? e.workflowId,
    step_key: e.stepKey,
    retry_count: e.attempt - 1,
    created_at: e.createdAt.toISOString(),
    session_id: e.sessionId,
    user_id: e.userId,
    otel_traceparent: e.otelTraceparent,
    otel_span_id: e.otelSpanId,
    initial_state: e.initialState ?? null,
    run_timeout_seconds: e.runTimeoutSeconds,
    channel_context: e.channelContext ?? null,
    spool_claim: `${e.dispatchSeq}.${e.lease}`,
    attempt: e.attempt,
    queue_name: e.queueName,
    ...journalWithin(journal, MAX_PUSHED_JOURNAL_BYTES),
    spool_max_result_bytes: maxResultBytes(),
  };
}

/**
 * What the insert of a run pushed before it (insertNewRunOnPushWorker) stores of what the push
 * carries: a root run of its workflow's latest registration, started as inserted, its JSON in jsonb's
 * key order (a replay reads it back so, and must see what the first run saw).
 */
function newRunAsPushed(run: NewRun, deploymentId: string): PushedFields {
  const r = run.request;
  return {
    id: run.id,
    workflowId: r.workflowId,
    deploymentId,
    input: inJsonbOrder(r.input ?? {}) as PushedFields["input"],
    parentExecutionId: null,
    rootExecutionId: run.id,
    stepKey: r.stepKey ?? null,
    attempt: 1,
    createdAt: run.createdAt,
    sessionId: r.sessionId ?? null,
    userId: r.userId ?? null,
    otelTraceparent: r.otelTraceparent ?? null,
    otelSpanId: null,
    initialState: inJsonbOrder(r.initialState ?? null) as PushedFields["initialState"],
    runTimeoutSeconds: r.runTimeoutSeconds ?? null,
    channelContext: inJsonbOrder(r.channelContext ?? null) as PushedFields["channelContext"],
    // startedAsInserted's: the first start's.
    ...FIRST_START_CLAIM,
    queueName: run.queueName,
  };
}

/**
 * A journal larger than this is left out of the push (the worker then reads it with `GET …/steps`,
 * which pages): a run with many or large stored steps must not make every push to it huge.
 */
const MAX_PUSHED_JOURNAL_BYTES = 256 * 1024;

function journalWithin(
  journal: JournalRows | null | undefined,
  maxBytes: number,
): { spool_journal?: WireJournal } {
  if (!journal) return {};
  const wire = toWireJournal(journal);
  return Buffer.byteLength(JSON.stringify(wire)) <= maxBytes ? { spool_journal: wire } : {};
}

/** A journal as the worker routes carry it (the answer of `GET …/steps`). */
function toWireJournal(j: JournalRows): WireJournal {
  return {
    steps: j.steps.map((s) => ({
      step_key: s.stepKey,
      outputs: s.output ?? null,
      success: s.status === "completed",
      error: (s.error as SerializedError | null) ?? null,
      seq: s.seq,
      kind: s.kind,
      attempts: s.attempts,
    })),
    waits: j.waits.map((w) => ({
      step_key: w.stepKey,
      seq: w.seq,
      kind: w.kind,
      wake_at: w.wakeAt?.toISOString() ?? null,
    })),
  };
}
