// `npm run bench:sweeps [-- --finished 500000] [--queued 200000] [--waiting 20000] [--reps 7]`
//
// Do the scheduler's sweeps stay cheap on a big table? The scheduler runs Sweeps.runAll every 2 s
// (SPOOL_SWEEP_INTERVAL_MS) whatever the load. Starts its own Postgres + Redis (scripts/services.mjs),
// seeds one fresh project with one INSERT … SELECT FROM
// generate_series per kind of run: finished runs (a third with a deadline long past), a backlog of
// queued runs (a third with a deadline ahead), runs waiting for a slot of a lane with a limit of 2
// and one running run, and a few other running ones; ANALYZEs; then times each sweep as runAll calls
// it (`--reps` times, median ms), and what ending a run of that lane does (its oldest waiter woken),
// with the schema as migrated and again without its partial indexes (dropped), to show what they are
// for. The backlog's jobs are enqueued first, as the API would have; the sweeps then find nothing to
// repair but one free slot a sweep. Prints a Markdown table.
import { cpus, loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { createDatabase } from "@spool/db";
import { Engine } from "@spool/engine";
import { createLogger } from "@spool/shared";
import { Redis } from "ioredis";
import type { EngineDeps } from "../packages/engine/src/deps.js";
import { runDispatch } from "../packages/engine/src/execution/create-executions.js";
import { handOnFreeSlots } from "../packages/engine/src/execution/lane-slots.js";
import { benchServices, stopAllAndExit, stopAllOnSignals } from "./system.js";

const { values: args } = parseArgs({
  options: {
    finished: { type: "string", default: "500000" },
    queued: { type: "string", default: "200000" },
    waiting: { type: "string", default: "20000" },
    reps: { type: "string", default: "7" },
  },
  strict: true,
});
const counts = {
  finished: Number(args.finished),
  queued: Number(args.queued),
  waiting: Number(args.waiting),
  running: 100,
};
const reps = Number(args.reps);
for (const [k, v] of Object.entries({ ...counts, reps }))
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${k} must be a positive integer`);

/** The partial indexes the sweeps rely on (prisma/schema.prisma), dropped for the second round. */
const PARTIAL_INDEXES = ["executions_open_deadline_idx", "executions_slot_waiters_idx"];
const PROJECT = "00000000-0000-4000-8000-000000000001";
const LANE = { projectId: PROJECT, queueName: "limited", concurrencyKey: null };
const log = (m: string) => process.stderr.write(`[bench:sweeps] ${m}\n`);

stopAllOnSignals();
// It drops indexes and seeds a fixed project: never on a database someone else gave it.
if (process.env.DATABASE_URL || process.env.REDIS_URL)
  throw new Error("bench:sweeps runs on a Postgres and Redis of its own: unset DATABASE_URL and REDIS_URL");
const { databaseUrl, redisUrl } = await benchServices({ durable: false });
const { prisma, pool } = createDatabase({ databaseUrl, maxConnections: 5 });
const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
const engine = new Engine({ prisma, pool, redis, redisUrl, logger: createLogger("bench-sweeps", "warn") });
// What handOnFreeSlots uses of the engine's dependencies (internal to the engine, so built here).
const laneDeps = { prisma, dispatcher: engine.dispatcher } as unknown as EngineDeps;

try {
  await seed();
  const rounds: Record<string, Record<string, number>> = {};
  rounds["as migrated"] = await timeSweeps();
  for (const index of PARTIAL_INDEXES) await pool.query(`DROP INDEX ${index}`);
  await pool.query("ANALYZE executions");
  rounds["without the partial indexes"] = await timeSweeps();
  printTable(rounds);
} finally {
  await engine.close();
  await Promise.allSettled([prisma.$disconnect(), pool.end()]);
  redis.disconnect();
}
await stopAllAndExit(0);

async function seed(): Promise<void> {
  const t0 = performance.now();
  await pool.query(`INSERT INTO projects (id, name, updated_at) VALUES ('${PROJECT}', 'sweeps', now())`);
  await pool.query(
    `INSERT INTO deployments (project_id, deployment_id, updated_at) VALUES ('${PROJECT}', 'd', now())`,
  );
  // The waiting runs' lane: two slots, one held by a running run.
  await pool.query(
    `INSERT INTO queues (project_id, name, concurrency_limit, updated_at) VALUES ('${PROJECT}', 'limited', 2, now())`,
  );
  const runs = (n: number, status: string, o: { lane?: string; deadline?: string; waiting?: boolean }) =>
    pool.query(`
      INSERT INTO executions (id, project_id, deployment_id, workflow_id, workflow_type, queue_name,
        dispatch_queue, status, input, created_at, updated_at, deadline_at, slot_waiting_since, started_at)
      SELECT gen_random_uuid(), '${PROJECT}', 'd', 'wf', 'workflow', '${o.lane ?? "default"}', 'default',
             '${status}', '{}'::jsonb, now() - g * interval '1 ms', now() - g * interval '1 ms',
             ${o.deadline ? `CASE WHEN g % 3 = 0 THEN now() + interval '${o.deadline}' END` : "NULL"},
             ${o.waiting ? "now()" : "NULL"}, ${status === "queued" ? "NULL" : "now()"}
        FROM generate_series(1, ${n}) g`);
  log(
    `seeding ${Object.entries(counts)
      .map(([k, v]) => `${v} ${k}`)
      .join(", ")}`,
  );
  await runs(counts.finished, "completed", { deadline: "-1 hour" });
  await runs(counts.queued, "queued", { deadline: "1 hour" });
  await runs(counts.waiting, "queued", { lane: "limited", waiting: true });
  await runs(counts.running - 1, "running", { deadline: "1 hour" });
  await runs(1, "running", { lane: "limited" });
  await pool.query("VACUUM ANALYZE executions");
  // The backlog's jobs, as the API enqueued them (the waiting runs have none, on purpose).
  const { rows } = await pool.query<{ id: string; dispatchSeq: number; dispatchQueue: string }>(
    `SELECT id, dispatch_seq AS "dispatchSeq", dispatch_queue AS "dispatchQueue" FROM executions
      WHERE status = 'queued' AND slot_waiting_since IS NULL`,
  );
  for (let i = 0; i < rows.length; i += 1000)
    await engine.dispatcher.dispatch(
      rows.slice(i, i + 1000).map((e) => runDispatch({ ...e, projectId: PROJECT })),
    );
  log(`seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

/** Median ms of each sweep runAll makes, in its order, and of runAll itself. */
async function timeSweeps(): Promise<Record<string, number>> {
  const s = engine.sweeps;
  const steps: Record<string, () => Promise<unknown>> = {
    requeueLostJobs: () => s.requeueLostJobs(),
    fireOverdueTimers: () => s.fireOverdueTimers(),
    releaseDeadWorkers: () => s.releaseDeadWorkers(),
    timeOutRuns: () => s.timeOutRuns(),
    reportFinishedChildren: () => s.reportFinishedChildren(),
    releaseStrandedRuns: () => s.releaseStrandedRuns(),
    "runAll (all of them, and waking slot waiters)": () => s.runAll(),
    // What ending a run of a lane with a limit does after its commit (freeSlot).
    "a limited lane's run ends: its oldest waiter woken": () => handOnFreeSlots(laneDeps, LANE, 1),
  };
  const out: Record<string, number> = {};
  for (const [name, step] of Object.entries(steps)) {
    await step(); // warm-up: plans cached, pages in memory
    const ms: number[] = [];
    for (let i = 0; i < reps; i++) {
      const t = performance.now();
      await step();
      ms.push(performance.now() - t);
    }
    ms.sort((a, b) => a - b);
    out[name] = ms[Math.floor(ms.length / 2)] ?? Number.NaN;
  }
  return out;
}

function printTable(rounds: Record<string, Record<string, number>>): void {
  const names = Object.keys(rounds);
  const steps = Object.keys(rounds[names[0]!] ?? {});
  const lines = [
    `Sweeps on ${counts.finished} finished, ${counts.queued} queued, ${counts.waiting} slot-waiting and ` +
      `${counts.running} running runs; median of ${reps}, ms (${cpus().length} cores, load average ` +
      `${loadavg()[0]?.toFixed(1)})`,
    "",
    `| sweep | ${names.join(" | ")} |`,
    `|---|${names.map(() => "---:").join("|")}|`,
    ...steps.map((step) => `| ${step} | ${names.map((n) => rounds[n]?.[step]?.toFixed(1)).join(" | ")} |`),
  ];
  console.log(lines.join("\n"));
}
