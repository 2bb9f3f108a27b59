import type { pg } from "@spool/db";
import type { Logger } from "@spool/shared";
import { Job } from "bullmq";
import type { Redis } from "ioredis";
import { handOverHeldRuns } from "../push/held-runs.js";
import { ALIVE_CONNECTION_PREFIX, BULL_PREFIX, CONSUMER_NAME, type Dispatcher } from "./dispatcher.js";

export { CONSUMER_NAME };

export interface OrphanedJobsOptions {
  /**
   * How long a consumer must be missing from Redis's client list before its jobs are taken back. A
   * live worker whose connection merely dropped reconnects within ~1 s; taking its jobs would run
   * its current step twice (it is fenced at its next write), so this errs on the side of waiting.
   */
  graceMs?: number;
  /** No judging for this long after Redis restarted or was unreachable: consumers are reconnecting. */
  reconnectGraceMs?: number;
}

/** Rounds without a change still look at the active jobs this often (e.g. after this process started). */
const FULL_CHECK_MS = 10_000;

/**
 * Jobs whose consumer died hold their queue's concurrency slots until BullMQ notices their locks
 * expired: `SPOOL_JOB_LOCK_MS` (30 s), and its stalled check runs only that often, so a crashed
 * worker's jobs held a limit-N queue's slots for up to a minute or more. A process that dies closes
 * its Redis connections, so Redis knows at once. Each round lists Redis's clients (one command); when
 * the set of consumers changed, orphans are pending, or every 10 s, it reads the active jobs of every
 * queue a live consumer serves (a job nobody can take anyway may wait for BullMQ). A job whose
 * consumer has been missing for `graceMs` goes back to wait, exactly what BullMQ's stalled check would
 * do later; the next worker's start takes a new lease, which fences the dead one for good.
 *
 * Runs an API process pushed without a job, or an in-cluster worker process took without one
 * (`executions.push_holder`), are looked at in the same rounds: those of a holder missing for
 * `graceMs` get their jobs, and whoever takes one adopts the run or starts it again (a push
 * dispatcher, as it would a dead dispatcher's job; a worker, under a new lease). So do those of a
 * listed in-cluster process whose lease in Redis lapsed (frozen).
 */
export class OrphanedJobs {
  /** Consumers holding active jobs while missing from the client list, and since when. */
  private missing = new Map<string, number>();
  private lastConsumers = "";
  private lastFullCheckAt = 0;
  private lastListingAt = 0;
  private runId: string | undefined;
  private blindUntil = 0;
  private readonly graceMs: number;
  private readonly reconnectGraceMs: number;

  constructor(
    private readonly redis: Redis,
    private readonly dispatcher: Dispatcher,
    private readonly pool: pg.Pool,
    private readonly logger: Logger,
    o: OrphanedJobsOptions = {},
  ) {
    this.graceMs = o.graceMs ?? 5000;
    this.reconnectGraceMs = o.reconnectGraceMs ?? 30_000;
  }

  /** One round: returns how many jobs went back to wait. */
  async check(): Promise<number> {
    let connected: Map<string, Set<string>>;
    let runId: string | undefined;
    try {
      connected = connectedConsumers(String(await this.redis.client("LIST")));
      runId = /run_id:(\w+)/.exec(await this.redis.info("server"))?.[1];
    } catch (err) {
      // Out of Redis's reach: so are the consumers, perhaps, which then reconnect with a backoff.
      this.blindUntil = Date.now() + this.reconnectGraceMs;
      throw err;
    }
    const now = Date.now();
    // Redis restarted: every consumer reconnects (backing off up to 1 s; a loaded process takes longer).
    if (this.runId !== undefined && runId !== this.runId) this.blindUntil = now + this.reconnectGraceMs;
    this.runId = runId;
    // This process stalled between two listings: what it missed is unknown, so the clocks restart.
    const restart = now < this.blindUntil || now - this.lastListingAt > this.graceMs;
    this.lastListingAt = now;

    const consumers = [...connected.keys()].sort().join(" ");
    const changed = consumers !== this.lastConsumers;
    this.lastConsumers = consumers;
    if (!changed && this.missing.size === 0 && now - this.lastFullCheckAt < FULL_CHECK_MS) return 0;
    this.lastFullCheckAt = now;

    const queues = new Set([...connected.values()].flatMap((q) => [...q]));
    const orphans = (await this.activeJobs([...queues])).filter(
      (j) => j.processedBy !== undefined && !connected.has(j.processedBy),
    );
    const holders = await this.pushHolders();
    const goneHolders = holders.filter((h) => !connected.has(h.holder)).map((h) => h.holder);
    const missing = new Map<string, number>();
    /** Whether `consumer` has been missing for the grace period (from this round on, if it is new). */
    const missingLongEnough = (consumer: string) => {
      const since = restart ? now : (missing.get(consumer) ?? this.missing.get(consumer) ?? now);
      missing.set(consumer, since);
      return now - since >= this.graceMs;
    };
    let moved = 0;
    for (const job of orphans) {
      if (missingLongEnough(job.processedBy as string) && (await this.moveToWait(job))) moved++;
    }
    for (const holder of goneHolders) {
      if (missingLongEnough(holder)) moved += await handOverHeldRuns(this.pool, this.dispatcher, holder);
    }
    // Listed, but an in-cluster process whose lease lapsed: frozen, as a BullMQ job whose lock expired
    // (not judged while consumers may be reconnecting: their leases come back with them). Should it
    // come back, its next write is refused: the job's start takes a new lease.
    const listed = holders.filter((h) => h.inCluster && connected.has(h.holder)).map((h) => h.holder);
    const leased = restart ? new Set(listed) : await this.dispatcher.liveLeases(listed);
    for (const holder of listed.filter((h) => !leased.has(h))) {
      const handed = await handOverHeldRuns(this.pool, this.dispatcher, holder);
      if (handed > 0) {
        this.logger.warn(
          { consumer: holder, runs: handed },
          "a worker process stopped renewing its lease; its runs go to jobs",
        );
      }
      moved += handed;
    }
    this.missing = missing;
    if (moved > 0) this.logger.info({ jobs: moved }, "took back the jobs of consumers that are gone");
    return moved;
  }

  /**
   * The processes that hold running runs without jobs; `inCluster`: an in-cluster worker process
   * that takes runs without jobs (in-cluster/direct-runs.ts), which keeps a lease in Redis.
   */
  private async pushHolders(): Promise<{ holder: string; inCluster: boolean }[]> {
    // Purpose: see above; the inner predicate is executions_push_holder_idx's. Locks: none.
    const { rows } = await this.pool.query<{ holder: string; inCluster: boolean }>(
      `SELECT h.holder, EXISTS (SELECT 1 FROM workers w WHERE w.consumer_name = h.holder) AS "inCluster"
         FROM (SELECT DISTINCT push_holder AS holder FROM executions
                WHERE status = 'running' AND push_holder IS NOT NULL) h`,
    );
    return rows;
  }

  /** The active jobs of `queues`, each with the consumer that took it and its lock's token. */
  private async activeJobs(queues: string[]) {
    const key = (queue: string, suffix: string) => `${BULL_PREFIX}:${queue}:${suffix}`;
    const lists =
      (await queues.reduce((p, q) => p.lrange(key(q, "active"), 0, -1), this.redis.pipeline()).exec()) ?? [];
    const jobs = queues.flatMap((queue, i) =>
      ((lists[i]?.[1] as string[] | undefined) ?? []).map((id) => ({ queue, id })),
    );
    if (jobs.length === 0) return [];
    // One transaction: each job's consumer and lock token are read together, so a token is never
    // that of a live consumer that took the job after the dead one's name was read.
    const multi = this.redis.multi();
    for (const j of jobs) multi.hget(key(j.queue, j.id), "pb").get(key(j.queue, `${j.id}:lock`));
    const fields = (await multi.exec()) ?? [];
    return jobs.map((j, i) => ({
      ...j,
      processedBy: (fields[i * 2]?.[1] as string | null) ?? undefined,
      token: (fields[i * 2 + 1]?.[1] as string | null) ?? undefined,
    }));
  }

  /** Back to wait, with its lock's own token (a job a live consumer took since is left alone). */
  private async moveToWait(j: { queue: string; id: string; token?: string }): Promise<boolean> {
    if (!j.token) return false; // its lock expired: BullMQ's stalled check has it
    try {
      const job = await Job.fromId(this.dispatcher.queueByBullName(j.queue), j.id);
      if (!job) return false;
      await job.moveToWait(j.token);
      return true;
    } catch (err) {
      // Another scheduler took it back first, or its lock just expired.
      this.logger.debug({ err: String(err), job_id: j.id, queue: j.queue }, "orphaned job not moved");
      return false;
    }
  }
}

/**
 * Consumer name → the BullMQ queues it consumes, from CLIENT LIST (`name=spool:<b64>:w:<name>`). A
 * process's liveness connection (`spool:alive:<name>`) keeps it listed, with no queues of its own,
 * while its Workers drain with their blocking connections closed.
 */
export function connectedConsumers(list: string): Map<string, Set<string>> {
  const consumers = new Map<string, Set<string>>();
  const prefix = `${BULL_PREFIX}:`;
  for (const line of list.split("\n")) {
    const name = /(?:^| )name=(\S*)/.exec(line)?.[1];
    if (!name?.startsWith(prefix)) continue;
    if (name.startsWith(ALIVE_CONNECTION_PREFIX)) {
      const consumer = name.slice(ALIVE_CONNECTION_PREFIX.length);
      if (!consumers.has(consumer)) consumers.set(consumer, new Set());
      continue;
    }
    const at = name.indexOf(":w:", prefix.length);
    if (at < 0) continue;
    const queue = Buffer.from(name.slice(prefix.length, at), "base64").toString();
    const consumer = name.slice(at + 3);
    const queues = consumers.get(consumer) ?? new Set<string>();
    queues.add(queue);
    consumers.set(consumer, queues);
  }
  return consumers;
}
