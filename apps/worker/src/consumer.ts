import { BULL_PREFIX, bullQueueName, CONSUMER_NAME, type Engine, type JobData } from "@spool/engine";
import type { Logger, WorkflowDefinition } from "@spool/shared";
import { Worker } from "bullmq";
import { DirectRuns } from "./direct-runs.js";
import { executeJob, type InFlight } from "./execute-job.js";

export interface ConsumerOptions {
  engine: Engine;
  projectId: string;
  queues: string[];
  workflows: Map<string, WorkflowDefinition>;
  workerId: () => string | null;
  logger: Logger;
  /** Jobs this process runs at once, per queue. */
  concurrency: number;
  /** How long a job lock lives without renewal: a SIGKILLed worker's job is redelivered after it. */
  lockDurationMs: number;
  /** Whether APIs may start runs on this process without jobs (DirectRuns). */
  directRuns: boolean;
}

/** How long handed-back jobs get to be marked completed in BullMQ before the worker force-closes. */
const HAND_BACK_GRACE_MS = 2000;

/**
 * One BullMQ Worker per queue this process serves, and the runs APIs start on this process without
 * jobs (DirectRuns).
 */
export class Consumer {
  private readonly workers: Worker[] = [];
  readonly inFlight = new Map<string, InFlight>();
  private direct: DirectRuns | null = null;

  constructor(private readonly o: ConsumerOptions) {}

  async start(): Promise<void> {
    // Redis lists this process as alive until it lets go, also while its Workers drain.
    this.o.engine.dispatcher.announceConsumer();
    for (const queue of this.o.queues) {
      const worker = new Worker<JobData, string>(
        bullQueueName(this.o.projectId, queue),
        (job) =>
          executeJob({
            engine: this.o.engine,
            data: job.data,
            // BullMQ counts a delivery when it hands the job out (moveToActive), so 1 is the first.
            delivery: { first: job.attemptsStarted <= 1, enqueuedAt: job.timestamp },
            workflows: this.o.workflows,
            workerId: this.o.workerId,
            logger: this.o.logger,
            inFlight: this.inFlight,
          }),
        {
          connection: this.o.engine.dispatcher.workerConnection(),
          prefix: BULL_PREFIX,
          // Lets the scheduler take back this process's jobs as soon as it dies (OrphanedJobs).
          name: CONSUMER_NAME,
          concurrency: this.o.concurrency,
          lockDuration: this.o.lockDurationMs,
          stalledInterval: this.o.lockDurationMs,
          // A job whose worker died must always come back; the engine's dispatch sequence stops
          // a redelivered job from running a run that has moved on.
          maxStalledCount: 1_000_000,
        },
      );
      worker.on("failed", (job, err) =>
        this.o.logger.error(
          { err: err.message, job_id: job?.id, queue },
          "job failed (infrastructure error)",
        ),
      );
      worker.on("error", (err) =>
        this.o.logger.warn({ err: err.message, queue }, "consumer connection error"),
      );
      this.workers.push(worker);
    }
    if (this.o.directRuns) {
      this.direct = new DirectRuns({
        engine: this.o.engine,
        workflows: this.o.workflows,
        workerId: this.o.workerId,
        logger: this.o.logger,
        inFlight: this.inFlight,
        lockDurationMs: this.o.lockDurationMs,
        maxRunning: this.o.concurrency,
      });
      await this.direct.start();
    }
    this.o.logger.info(
      { queues: this.o.queues, concurrency: this.o.concurrency, direct_runs: this.o.directRuns },
      "consuming",
    );
  }

  /**
   * Graceful drain: take no new jobs, let in-flight runs finish for up to `timeoutMs`, then hand
   * the rest back to the queue at once (a new dispatch sequence and job) and end their jobs, instead
   * of letting their job locks expire.
   */
  async drain(timeoutMs: number): Promise<{ finished: boolean; handedBack: number }> {
    await this.direct?.stop();
    const closing = Promise.all([...this.workers.map((w) => w.close()), this.direct?.idle()]);
    const within = (ms: number) =>
      Promise.race([
        closing.then(() => true),
        new Promise<false>((resolve) => setTimeout(() => resolve(false), ms).unref()),
      ]);
    if (await within(timeoutMs)) return { finished: true, handedBack: await this.handOverLeftovers() };
    let handedBack = 0;
    for (const run of [...this.inFlight.values()]) {
      // Not released: the run is finishing (or was moved) right now; its job ends on its own.
      if (!(await this.o.engine.executions.release(run.executionId, run.claim))) continue;
      handedBack++;
      run.handBack();
    }
    // Their jobs now complete on their own; force-close only if BullMQ cannot finish them.
    if (!(await within(HAND_BACK_GRACE_MS))) await Promise.all(this.workers.map((w) => w.close(true)));
    return { finished: false, handedBack: handedBack + (await this.handOverLeftovers()) };
  }

  /**
   * Runs an API started on this process whose message never arrived (sent as it left its channel):
   * their jobs take them now, instead of the scheduler once this process is gone.
   */
  private async handOverLeftovers(): Promise<number> {
    if (!this.direct) return 0;
    const handed = await this.direct.handOverUnheld(0);
    await this.direct.close();
    return handed;
  }
}
