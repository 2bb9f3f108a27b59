import type { Execution } from "@spool/db";
import {
  advertiseConsumer,
  CONSUMER_NAME,
  type DirectRun,
  decodeDirectRun,
  directRunsChannel,
  type Engine,
  handOverHeldRuns,
  insertSentRun,
  type NewRun,
  newRunDispatch,
  repeatEvery,
  runDispatch,
  withdrawConsumer,
} from "@spool/engine";
import type { Logger, WorkflowDefinition } from "@spool/shared";
import { Redis, type RedisOptions } from "ioredis";
import { executeJob, type InFlight } from "./execute-job.js";

export interface DirectRunsOptions {
  engine: Engine;
  workflows: Map<string, WorkflowDefinition>;
  workerId: () => string | null;
  logger: Logger;
  /** Every run this process runs, with or without a job (the drain releases them all alike). */
  inFlight: Map<string, InFlight>;
  /** Its lease unrenewed this long, this process is taken for frozen and its runs go to jobs. */
  lockDurationMs: number;
  /** The most runs this process runs at once (its registered max_concurrent_executions). */
  maxRunning: number;
}

/** How often this process says it is alive on its worker row. */
const RENEW_MS = 1000;
/** How often runs named as this process's but not held here are looked for. */
const UNHELD_CHECK_MS = 5000;
/**
 * How long such a run may go unheld before it is handed to its job. A published run arrives within
 * milliseconds or never (its message was lost while the subscription reconnected).
 */
const UNHELD_GRACE_MS = 10_000;

/**
 * Runs an API started on this process without a job (in-cluster/direct-runs.ts in the engine): they
 * arrive on this process's Redis channel and go through the same runner as a job's run. The worker
 * row names this process and is renewed every second, so APIs only send runs while it is subscribed
 * and alive, and only while it runs fewer than its concurrency in all (jobs included, counted in
 * Postgres). Its queues keep their own concurrency: were they to give way to these runs, new runs
 * would overtake a backlog of jobs, which would wait for as long as new runs kept coming.
 */
export class DirectRuns {
  private subscriber: Redis | null = null;
  private loops: { stop(): Promise<void> }[] = [];
  private readonly running = new Set<Promise<unknown>>();
  /** The ids of the runs sent to this process that it runs now. */
  private readonly ids = new Set<string>();
  private accepting = false;

  constructor(private readonly o: DirectRunsOptions) {}

  /** Subscribes, then says so on the worker row (a run sent before the subscription would be lost). */
  async start(): Promise<void> {
    const subscriber = new Redis(this.o.engine.dispatcher.workerConnection() as RedisOptions);
    subscriber.on("error", (err) => this.o.logger.warn({ err: err.message }, "run channel connection error"));
    subscriber.on("message", (_channel: string, message: string) => this.take(message));
    this.subscriber = subscriber;
    await subscriber.subscribe(directRunsChannel(CONSUMER_NAME));
    this.accepting = true;
    // Never two at once, and stop() waits for the one under way: a renewal must not name this
    // process on its row again after the withdrawal.
    const warn = (err: unknown) =>
      this.o.logger.debug({ err: String(err) }, "renewing the worker row failed");
    this.loops = [
      repeatEvery(() => this.renew(), RENEW_MS, warn),
      repeatEvery(
        async () => void (await this.handOverUnheld(UNHELD_GRACE_MS)),
        UNHELD_CHECK_MS,
        () => {},
      ),
    ];
  }

  /** Takes no more runs: the worker row stops naming this process, and the channel is left. */
  async stop(): Promise<void> {
    this.accepting = false;
    await Promise.all(this.loops.map((loop) => loop.stop()));
    this.loops = [];
    await withdrawConsumer(this.o.engine.pool).catch((err: unknown) =>
      this.o.logger.warn({ err: String(err) }, "withdrawing from the worker row failed"),
    );
    // Runs an API started just before the withdrawal still arrive until the channel is left.
    await this.subscriber?.unsubscribe().catch(() => {});
  }

  /** Resolves once every run taken here has ended. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  /**
   * Hands to their jobs the runs named as this process's that it does not hold (`graceMs` after
   * their last update; 0 when stopping: none can arrive any more).
   */
  async handOverUnheld(graceMs: number): Promise<number> {
    try {
      return await handOverHeldRuns(this.o.engine.pool, this.o.engine.dispatcher, CONSUMER_NAME, {
        notUpdatedSince: new Date(Date.now() - graceMs),
        except: this.o.inFlight,
      });
    } catch (err) {
      this.o.logger.warn({ err: String(err) }, "handing over unheld runs failed");
      return 0;
    }
  }

  async close(): Promise<void> {
    this.subscriber?.disconnect();
    this.subscriber = null;
  }

  private async renew(): Promise<void> {
    const workerId = this.o.workerId();
    if (this.accepting && workerId) await advertiseConsumer(this.o.engine, workerId, this.o.lockDurationMs);
  }

  private take(message: string): void {
    let sent: DirectRun;
    try {
      sent = decodeDirectRun(message);
    } catch (err) {
      this.o.logger.warn({ err: String(err) }, "unreadable run on the run channel");
      return;
    }
    if (sent.kind === "started") {
      this.execute(sent.run.id, runDispatch(sent.run), { started: sent.run });
      return;
    }
    const run = sent.run;
    if (!this.o.workflows.has(run.request.workflowId) || !this.hasRoom() || !this.o.workerId()) {
      // Not for this process after all: inserted queued (unless it is in Postgres already), for its job.
      void insertSentRun(this.o.engine, run).catch((err: unknown) =>
        this.o.logger.warn({ err: String(err), execution_id: run.id }, "inserting a sent run failed"),
      );
      return;
    }
    this.execute(run.id, newRunDispatch(run), { newRun: run });
  }

  /** Whether this process runs fewer runs than its max (its jobs' runs and those sent to it). */
  private hasRoom(): boolean {
    let jobs = 0;
    for (const id of this.o.inFlight.keys()) if (!this.ids.has(id)) jobs++;
    return this.ids.size + jobs < this.o.maxRunning;
  }

  private execute(
    id: string,
    job: ReturnType<typeof runDispatch>,
    sent: { started: Execution } | { newRun: NewRun },
  ): void {
    this.ids.add(id);
    const running = executeJob({
      engine: this.o.engine,
      data: job.data,
      ...sent,
      workflows: this.o.workflows,
      workerId: this.o.workerId,
      logger: this.o.logger,
      inFlight: this.o.inFlight,
    }).catch(async (err: unknown) => {
      // What a job's retry would do: the job of the run's dispatch starts it again under a new
      // lease (or finds it moved on), here or on another worker; a new run not inserted yet is first.
      this.o.logger.warn(
        { err: String(err), execution_id: id },
        "run failed to run here; its job takes over",
      );
      if ("newRun" in sent) await insertSentRun(this.o.engine, sent.newRun);
      else await this.o.engine.dispatcher.dispatch([job]);
    });
    this.running.add(running);
    void running.finally(() => {
      this.running.delete(running);
      this.ids.delete(id);
    });
  }
}
