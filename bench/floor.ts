// The floor: what the same Redis and Postgres do with nothing of Spool in between.
//  - BullMQ: a bare job round trip (add → Worker picks it up → completed), in this process.
//  - Postgres: a bare INSERT + commit into a scratch table, with the pg client.
import { performance } from "node:perf_hooks";
import { type ConnectionOptions, type Job, Queue, Worker } from "bullmq";
import pg from "pg";
import { round, type Summary, summarize } from "./stats.js";

export interface FloorResult {
  bullmq: {
    concurrency1: { jobs: number; roundTripMs: Summary; jobsPerSec: number | null };
    concurrencyN: { concurrency: number; jobs: number; elapsedMs: number; jobsPerSec: number | null };
  };
  postgres: {
    sequential: { inserts: number; insertCommitMs: Summary; insertsPerSec: number | null };
    concurrent: { clients: number; inserts: number; elapsedMs: number; insertsPerSec: number | null };
  };
}

function redisConnection(redisUrl: string): ConnectionOptions {
  const u = new URL(redisUrl);
  return {
    host: u.hostname,
    port: Number(u.port || 6379),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(u.pathname.length > 1 ? { db: Number(u.pathname.slice(1)) } : {}),
    maxRetriesPerRequest: null,
  };
}

const deadlineError = (what: string, ms: number) => new Error(`${what} did not finish within ${ms} ms`);

async function bullmqFloor(
  redisUrl: string,
  o: { jobs1: number; jobsN: number; concurrency: number; timeoutMs: number },
): Promise<FloorResult["bullmq"]> {
  const connection = redisConnection(redisUrl);
  const name = `floor-${process.pid}-${Date.now()}`;
  const prefix = "spoolbench"; // its own key space: nothing of Spool's queues is touched
  const queue = new Queue(name, { connection, prefix });
  const jobOpts = { removeOnComplete: true, removeOnFail: true };
  const waiters = new Map<string, () => void>();
  let completed = 0;
  let lastCompletedAt = 0;
  const onCompleted = (job: Job) => {
    completed++;
    lastCompletedAt = performance.now();
    const w = waiters.get(String(job.id));
    if (w) {
      waiters.delete(String(job.id));
      w();
    }
  };
  try {
    // Concurrency 1, one job at a time: the round trip.
    let worker = new Worker(name, async () => null, { connection, prefix, concurrency: 1 });
    worker.on("completed", onCompleted);
    await worker.waitUntilReady();
    const rtt: number[] = [];
    const start1 = performance.now();
    const end1 = start1 + o.timeoutMs;
    for (let i = 0; i < o.jobs1 && performance.now() < end1; i++) {
      const t0 = performance.now();
      const done = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(deadlineError("a floor job", 10_000)), 10_000);
        waiters.set(`c1-${i}`, () => {
          clearTimeout(timer);
          resolve();
        });
      });
      await queue.add("floor", { i }, { ...jobOpts, jobId: `c1-${i}` });
      await done;
      rtt.push(performance.now() - t0);
    }
    const elapsed1 = performance.now() - start1;
    await worker.close();

    // Concurrency N (the worker's): the queue is filled, then drained by one Worker.
    completed = 0;
    const jobs = Array.from({ length: o.jobsN }, (_, i) => ({
      name: "floor",
      data: { i },
      opts: { ...jobOpts, jobId: `cn-${i}` },
    }));
    for (let i = 0; i < jobs.length; i += 500) await queue.addBulk(jobs.slice(i, i + 500));
    worker = new Worker(name, async () => null, {
      connection,
      prefix,
      concurrency: o.concurrency,
      autorun: false,
    });
    worker.on("completed", onCompleted);
    await worker.waitUntilReady();
    const startN = performance.now();
    void worker.run();
    while (completed < o.jobsN && performance.now() - startN < o.timeoutMs) {
      await new Promise((r) => setTimeout(r, 5));
    }
    const elapsedN = (completed > 0 ? lastCompletedAt : performance.now()) - startN;
    const doneN = completed;
    await worker.close();
    return {
      concurrency1: {
        jobs: rtt.length,
        roundTripMs: summarize(rtt),
        jobsPerSec: rtt.length ? round((rtt.length / elapsed1) * 1000, 1) : null,
      },
      concurrencyN: {
        concurrency: o.concurrency,
        jobs: doneN,
        elapsedMs: round(elapsedN, 1) ?? 0,
        jobsPerSec: doneN ? round((doneN / elapsedN) * 1000, 1) : null,
      },
    };
  } finally {
    await queue.obliterate({ force: true }).catch(() => {});
    await queue.close();
  }
}

async function postgresFloor(
  databaseUrl: string,
  o: { inserts1: number; insertsN: number; clients: number; timeoutMs: number },
): Promise<FloorResult["postgres"]> {
  const table = `bench_floor_${process.pid}_${Date.now()}`;
  const pool = new pg.Pool({ connectionString: databaseUrl, max: o.clients });
  pool.on("error", () => {}); // an idle client dropped at shutdown is not an error here
  try {
    await pool.query(
      `CREATE TABLE ${table} (id bigserial PRIMARY KEY, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`,
    );
    const sql = `INSERT INTO ${table} (payload) VALUES ($1)`;
    // Sequential, one client: each INSERT is its own transaction (autocommit = insert + commit).
    const one = await pool.connect();
    const lat: number[] = [];
    const start1 = performance.now();
    try {
      for (let i = 0; i < o.inserts1 && performance.now() - start1 < o.timeoutMs; i++) {
        const t0 = performance.now();
        await one.query(sql, [JSON.stringify({ i })]);
        lat.push(performance.now() - t0);
      }
    } finally {
      one.release();
    }
    const elapsed1 = performance.now() - start1;
    // Concurrent: `clients` connections share the inserts.
    let next = 0;
    let done = 0;
    const startN = performance.now();
    await Promise.all(
      Array.from({ length: o.clients }, async () => {
        const c = await pool.connect();
        try {
          while (next < o.insertsN && performance.now() - startN < o.timeoutMs) {
            next++;
            await c.query(sql, [JSON.stringify({ i: next })]);
            done++;
          }
        } finally {
          c.release();
        }
      }),
    );
    const elapsedN = performance.now() - startN;
    return {
      sequential: {
        inserts: lat.length,
        insertCommitMs: summarize(lat),
        insertsPerSec: lat.length ? round((lat.length / elapsed1) * 1000, 1) : null,
      },
      concurrent: {
        clients: o.clients,
        inserts: done,
        elapsedMs: round(elapsedN, 1) ?? 0,
        insertsPerSec: done ? round((done / elapsedN) * 1000, 1) : null,
      },
    };
  } finally {
    await pool.query(`DROP TABLE IF EXISTS ${table}`).catch(() => {});
    await pool.end();
  }
}

export async function measureFloor(
  urls: { databaseUrl: string; redisUrl: string },
  o: {
    jobs1: number;
    jobsN: number;
    inserts1: number;
    insertsN: number;
    concurrency: number;
    timeoutMs: number;
  },
): Promise<FloorResult> {
  const bullmq = await bullmqFloor(urls.redisUrl, {
    jobs1: o.jobs1,
    jobsN: o.jobsN,
    concurrency: o.concurrency,
    timeoutMs: o.timeoutMs,
  });
  const postgres = await postgresFloor(urls.databaseUrl, {
    inserts1: o.inserts1,
    insertsN: o.insertsN,
    clients: o.concurrency,
    timeoutMs: o.timeoutMs,
  });
  return { bullmq, postgres };
}
