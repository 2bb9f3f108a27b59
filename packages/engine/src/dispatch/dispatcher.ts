import type { Logger } from "@spool/shared";
import { type Job, Queue, type QueueOptions } from "bullmq";

/** What a BullMQ job asks a worker to do. Postgres decides whether it is still current. */
export type JobData =
  | { kind: "run"; projectId: string; executionId: string; dispatchSeq: number }
  | { kind: "timer"; projectId: string; executionId: string; waitId: string };

export interface DispatchRequest {
  projectId: string;
  queueName: string;
  data: JobData;
  /** Deterministic: a repeated enqueue of the same state is a no-op in BullMQ. */
  jobId: string;
  delayMs?: number;
}

export const runJobId = (executionId: string, dispatchSeq: number) => `${executionId}.${dispatchSeq}`;
/** A wait's timer job; a re-armed one (it fired early) gets its own id, as the first is still active. */
export const timerJobId = (waitId: string, rearmedAt?: number) =>
  rearmedAt === undefined ? `timer.${waitId}` : `timer.${waitId}.${rearmedAt}`;

/**
 * BullMQ queue name of a project's queue. BullMQ joins key parts with ':', so the client-chosen
 * queue name (which may contain ':') is percent-encoded.
 */
export const bullQueueName = (projectId: string, queueName: string) =>
  `${projectId}.${encodeURIComponent(queueName)}`;

export const BULL_PREFIX = "spool";

export interface DispatcherOptions {
  redisUrl: string;
  logger: Logger;
  /** Bound on one enqueue: when Redis is down the run stays queued in Postgres and the sweep retries. */
  enqueueTimeoutMs?: number;
}

/**
 * Producer side of dispatch. Postgres is the source of truth: every enqueue happens after the
 * commit that made it necessary, and a failed enqueue is only logged — the scheduler's sweep
 * re-enqueues queued executions that have no job.
 */
export class Dispatcher {
  private readonly queues = new Map<string, Queue>();
  private readonly connection: QueueOptions["connection"];
  private readonly enqueueTimeoutMs: number;

  constructor(private readonly options: DispatcherOptions) {
    const url = new URL(options.redisUrl);
    this.connection = {
      host: url.hostname,
      port: Number(url.port || 6379),
      ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
      ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
      ...(url.pathname.length > 1 ? { db: Number(url.pathname.slice(1)) } : {}),
      // Producers fail fast instead of buffering while Redis is away; Postgres keeps the intent.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
    };
    this.enqueueTimeoutMs = options.enqueueTimeoutMs ?? 2000;
  }

  /** Connection options for BullMQ Workers consuming these queues (they must wait for Redis). */
  workerConnection(): QueueOptions["connection"] {
    return { ...this.connection, enableOfflineQueue: true, maxRetriesPerRequest: null };
  }

  queue(projectId: string, queueName: string): Queue {
    const name = bullQueueName(projectId, queueName);
    let queue = this.queues.get(name);
    if (!queue) {
      queue = new Queue(name, { connection: this.connection, prefix: BULL_PREFIX });
      queue.on("error", (err) =>
        this.options.logger.debug({ err: err.message, queue: name }, "queue connection error"),
      );
      this.queues.set(name, queue);
    }
    return queue;
  }

  /** Enqueues each request; returns how many reached Redis. Never throws. */
  async dispatch(requests: DispatchRequest[]): Promise<number> {
    const results = await Promise.allSettled(requests.map((r) => this.add(r)));
    let ok = 0;
    results.forEach((result, i) => {
      if (result.status === "fulfilled") ok++;
      else {
        this.options.logger.warn(
          { err: String(result.reason), jobId: requests[i]!.jobId },
          "enqueue failed; the sweep will retry",
        );
      }
    });
    return ok;
  }

  private async add(r: DispatchRequest): Promise<Job> {
    const adding = this.queue(r.projectId, r.queueName).add(r.data.kind, r.data, {
      jobId: r.jobId,
      ...(r.delayMs && r.delayMs > 0 ? { delay: Math.ceil(r.delayMs) } : {}),
      removeOnComplete: { count: 1000 },
      // A failed job must not linger: re-adding under its id would be a no-op, and the sweep's
      // re-enqueue of a still-queued run (e.g. after a database outage) would do nothing.
      removeOnFail: true,
      // Workflow failures and their retries are decided by the engine in Postgres. BullMQ attempts
      // only cover infrastructure errors in the processor (e.g. Postgres briefly unreachable).
      attempts: 5,
      backoff: { type: "exponential", delay: 1000 },
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`enqueue timed out after ${this.enqueueTimeoutMs} ms`)),
        this.enqueueTimeoutMs,
      );
    });
    try {
      return await Promise.race([adding, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** A job's BullMQ state ("active", "waiting", …), "unknown" when Redis has no such job. */
  jobState(projectId: string, queueName: string, jobId: string): Promise<string> {
    return this.queue(projectId, queueName).getJobState(jobId);
  }

  /** Applies a queue's concurrency limit across all workers (BullMQ global concurrency). */
  async setConcurrency(projectId: string, queueName: string, limit: number | null): Promise<void> {
    const queue = this.queue(projectId, queueName);
    if (limit === null) await queue.removeGlobalConcurrency();
    else await queue.setGlobalConcurrency(limit);
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.queues.values()].map((q) => q.close()));
    this.queues.clear();
  }
}
