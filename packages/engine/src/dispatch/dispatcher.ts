import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Logger } from "@spool/shared";
import { type ConnectionOptions, type Job, Queue } from "bullmq";
import { Redis } from "ioredis";

/** What a BullMQ job asks a worker to do. Postgres decides whether it is still current. */
export type JobData =
  | { kind: "run"; projectId: string; executionId: string; dispatchSeq: number; first?: FirstRun }
  | { kind: "timer"; projectId: string; executionId: string; waitId: string };

/**
 * What a new root run's start would read, carried by its first job so that an in-cluster worker can
 * write the start with the run's first step (execution/deferred-start.ts). Only for a small input on
 * a lane without a limit when the run was inserted; any worker may ignore it and start as usual.
 */
export interface FirstRun {
  workflowId: string;
  queueName: string;
  attempt: number;
  /** The run's lease as inserted: the deferred start takes the run only if it is still that. */
  lease: number;
  input: unknown;
}

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

/**
 * The name every BullMQ Worker of this process consumes under (its `name` option). BullMQ names the
 * Worker's blocking connection `<prefix>:<base64 queue>:w:<name>` and records the name on each job
 * it takes (`processedBy`), so Redis can tell which jobs a consumer that is gone was holding.
 * Unique per process: no `:` or space (CLIENT SETNAME and CLIENT LIST take neither well).
 */
export const CONSUMER_NAME = `${hostname().replace(/[^A-Za-z0-9.-]/g, "-")}.${process.pid}.${randomBytes(4).toString("hex")}`;

/**
 * The Redis client name of this process's producer connection. A draining BullMQ Worker closes its
 * blocking connection before its jobs finish, so that name alone would make a live consumer look
 * dead; this one stays until the process lets go of Redis (OrphanedJobs reads both).
 */
export const ALIVE_CONNECTION_PREFIX = `${BULL_PREFIX}:alive:`;

/**
 * A key per in-cluster worker process that takes runs without jobs, renewed every second with its
 * job lock's length to live (in-cluster/direct-runs.ts): while the process is listed but the key is
 * gone, it is frozen, and the runs it holds go to jobs (OrphanedJobs).
 */
export const CONSUMER_LEASE_PREFIX = `${BULL_PREFIX}:lease:`;

export interface DispatcherOptions {
  redisUrl: string;
  logger: Logger;
  /** Bound on one enqueue: when Redis is down the run stays queued in Postgres and the sweep retries. */
  enqueueTimeoutMs?: number;
  /** BullMQ Queue objects kept open at once (least recently used closed first); they share one connection. */
  maxOpenQueues?: number;
}

/** Connection options for a Redis URL, TLS included for `rediss://`. */
export function redisOptionsOf(redisUrl: string) {
  const url = new URL(redisUrl);
  return {
    host: url.hostname,
    port: Number(url.port || 6379),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(url.pathname.length > 1 ? { db: Number(url.pathname.slice(1)) } : {}),
    ...(url.protocol === "rediss:" ? { tls: { servername: url.hostname } } : {}),
  };
}

/**
 * Producer side of dispatch. Postgres is the source of truth: every enqueue happens after the
 * commit that made it necessary, and a failed enqueue is only logged — the scheduler's sweep
 * re-enqueues queued executions that have no job.
 *
 * Every queue's producer shares one Redis connection, and only the most recently used queues stay
 * open: clients choose queue names, so the number of queues must never decide how many connections
 * a process holds.
 */
export class Dispatcher {
  /** Open queues, least recently used first (a Map keeps insertion order; a use re-inserts). */
  private readonly queues = new Map<string, Queue>();
  private producer: Redis | null = null;
  private readonly options: DispatcherOptions;
  private readonly enqueueTimeoutMs: number;
  private readonly maxOpenQueues: number;

  constructor(options: DispatcherOptions) {
    this.options = options;
    this.enqueueTimeoutMs = options.enqueueTimeoutMs ?? 2000;
    this.maxOpenQueues = options.maxOpenQueues ?? 256;
  }

  /**
   * Connection options for BullMQ Workers consuming these queues (they must wait for Redis). They
   * try to reconnect every second at most: BullMQ's own backoff grows to 20 s, which left a queue
   * unconsumed that long after Redis came back.
   */
  workerConnection(): ConnectionOptions {
    return {
      ...redisOptionsOf(this.options.redisUrl),
      enableOfflineQueue: true,
      maxRetriesPerRequest: null,
      retryStrategy: (attempt: number) => Math.min(100 * attempt, 1000),
    };
  }

  /**
   * Opens the producer connection now: a process that consumes jobs calls this at start, so Redis
   * knows it is alive for as long as it holds them (see ALIVE_CONNECTION_PREFIX).
   */
  announceConsumer(): void {
    this.producerConnection();
  }

  private producerConnection(): Redis {
    if (!this.producer) {
      this.producer = new Redis({
        ...redisOptionsOf(this.options.redisUrl),
        connectionName: ALIVE_CONNECTION_PREFIX + CONSUMER_NAME,
        // Producers fail fast instead of buffering while Redis is away; Postgres keeps the intent.
        enableOfflineQueue: false,
        maxRetriesPerRequest: 1,
      });
      this.producer.on("error", (err) =>
        this.options.logger.debug({ err: err.message }, "dispatch connection error"),
      );
    }
    return this.producer;
  }

  queue(projectId: string, queueName: string): Queue {
    return this.queueByBullName(bullQueueName(projectId, queueName));
  }

  /** The producer of a queue by its BullMQ name (`bullQueueName`). */
  queueByBullName(name: string): Queue {
    let queue = this.queues.get(name);
    if (queue) {
      this.queues.delete(name);
    } else {
      // Given a connection instance, BullMQ shares it: closing the queue leaves it open.
      queue = new Queue(name, { connection: this.producerConnection(), prefix: BULL_PREFIX });
      queue.on("error", (err) =>
        this.options.logger.debug({ err: err.message, queue: name }, "queue connection error"),
      );
    }
    this.queues.set(name, queue);
    for (const [oldest, idle] of this.queues) {
      if (this.queues.size <= this.maxOpenQueues) break;
      this.queues.delete(oldest);
      void idle.close().catch(() => {});
    }
    return queue;
  }

  /**
   * Whether Redis answers this process now (its producer connection is ready). A run that can only
   * reach its process through Redis is not started there while this is false: it would show as
   * running until its publish failed and it went back to queued.
   */
  reachable(): boolean {
    return this.producerConnection().status === "ready";
  }

  /**
   * Publishes `message` on a Redis channel, on the producer connection: how many subscribers got
   * it. Throws when Redis is out of reach.
   */
  publish(channel: string, message: string): Promise<number> {
    return this.bounded(this.producerConnection().publish(channel, message), "publish");
  }

  /** This process's lease (CONSUMER_LEASE_PREFIX) lives `ms` from now. Throws when Redis is away. */
  async renewConsumerLease(ms: number): Promise<void> {
    await this.bounded(
      this.producerConnection().set(CONSUMER_LEASE_PREFIX + CONSUMER_NAME, "1", "PX", ms),
      "lease renewal",
    );
  }

  /** Of these consumers' leases (CONSUMER_LEASE_PREFIX), which exist. Throws when Redis is away. */
  async liveLeases(consumers: string[]): Promise<Set<string>> {
    if (consumers.length === 0) return new Set();
    const pipeline = this.producerConnection().pipeline();
    for (const c of consumers) pipeline.exists(CONSUMER_LEASE_PREFIX + c);
    const results = (await this.bounded(pipeline.exec(), "reading leases")) ?? [];
    return new Set(consumers.filter((_, i) => results[i]?.[1] === 1));
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
    return this.bounded(adding, "enqueue");
  }

  /** `work`, or an error once enqueueTimeoutMs has passed (BullMQ waits for Redis indefinitely). */
  private async bounded<T>(work: Promise<T>, what: string): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${what} timed out after ${this.enqueueTimeoutMs} ms`)),
        this.enqueueTimeoutMs,
      );
    });
    try {
      return await Promise.race([work, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Of requests for queued runs, those whose job Redis does not hold (`missing`), and those whose job
   * it holds finished (`finished`: ended without moving its run on; enqueueing under its id would be
   * a no-op, so it must be removed first). One pipelined HMGET per job, far less than an enqueue.
   * Throws when Redis is unreachable.
   */
  async lostJobs(
    requests: DispatchRequest[],
  ): Promise<{ missing: DispatchRequest[]; finished: DispatchRequest[] }> {
    const lost = { missing: [] as DispatchRequest[], finished: [] as DispatchRequest[] };
    if (requests.length === 0) return lost;
    const pipeline = this.producerConnection().pipeline();
    // Every job hash has `timestamp` (set when added); `finishedOn` once it completed or failed.
    for (const r of requests)
      pipeline.hmget(this.queue(r.projectId, r.queueName).toKey(r.jobId), "timestamp", "finishedOn");
    const results = (await this.bounded(pipeline.exec(), "checking jobs")) ?? [];
    requests.forEach((r, i) => {
      const [err, fields] = results[i] ?? [new Error("no answer"), null];
      if (err) throw err;
      const [added, finishedOn] = (fields ?? []) as (string | null)[];
      if (added === null || added === undefined) lost.missing.push(r);
      else if (finishedOn !== null && finishedOn !== undefined) lost.finished.push(r);
    });
    return lost;
  }

  /**
   * Removes a job that no worker holds (waiting, delayed, or finished); one a worker holds stays.
   * Never throws: this only saves a worker a job that would find nothing to do.
   */
  async removeJob(projectId: string, queueName: string, jobId: string): Promise<void> {
    try {
      await this.bounded(this.queue(projectId, queueName).remove(jobId), "removing a job");
    } catch (err) {
      this.options.logger.debug({ err: String(err), jobId }, "job not removed");
    }
  }

  /** A job's BullMQ state ("active", "waiting", …), "unknown" when Redis has no such job. */
  jobState(projectId: string, queueName: string, jobId: string): Promise<string> {
    return this.queue(projectId, queueName).getJobState(jobId);
  }

  /**
   * Removes a BullMQ global concurrency an earlier version set on a queue: lane limits are counted
   * in Postgres now (execution/take-run.ts), and a stale one would also cap the queue's other lanes.
   */
  async removeLegacyLimit(projectId: string, queueName: string): Promise<void> {
    await this.bounded(this.queue(projectId, queueName).removeGlobalConcurrency(), "removing a queue limit");
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.queues.values()].map((q) => q.close()));
    this.queues.clear();
    this.producer?.disconnect();
    this.producer = null;
  }
}
