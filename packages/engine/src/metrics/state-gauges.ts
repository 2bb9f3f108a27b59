import { Prisma, type PrismaClient } from "@spool/db";
import { Gauge, type Registry } from "prom-client";

// Purpose: runs by queue and state (queued, waiting for a slot, running), for the queue gauges.
// Params: none. Locks: none. Result: one row per (project, queue, state) with runs in it.
const RUNS_BY_QUEUE = Prisma.sql`
  SELECT project_id AS "projectId", queue_name AS "queue",
         CASE WHEN status = 'running' THEN 'running'
              WHEN slot_waiting_since IS NOT NULL THEN 'waiting_for_slot' ELSE 'queued' END AS state,
         count(*)::int AS n
    FROM executions WHERE status IN ('queued', 'running')
   GROUP BY 1, 2, 3`;

// Purpose: online workers by deployment and mode. Params: none. Locks: none.
const ONLINE_WORKERS = Prisma.sql`
  SELECT project_id AS "projectId", deployment_id AS "deployment", mode, count(*)::int AS n
    FROM workers WHERE status = 'online' GROUP BY 1, 2, 3`;

/**
 * Gauges read from Postgres at each scrape: what is queued and running on each queue, each queue's
 * limit, and the online workers. Only one process should register them (the API), or Prometheus
 * would see each value once per process.
 */
export function registerStateGauges(registry: Registry, prisma: PrismaClient): void {
  new Gauge({
    name: "spool_queue_runs",
    help: "Runs of a queue now: queued (waiting for a worker), waiting_for_slot (held by its limit), running",
    labelNames: ["project", "queue", "state"],
    registers: [registry],
    async collect() {
      this.reset();
      const rows =
        await prisma.$queryRaw<{ projectId: string; queue: string; state: string; n: number }[]>(
          RUNS_BY_QUEUE,
        );
      for (const r of rows) this.set({ project: r.projectId, queue: r.queue, state: r.state }, r.n);
    },
  });
  new Gauge({
    name: "spool_queue_concurrency_limit",
    help: "A queue's concurrency limit per concurrency key (queues without one are not listed)",
    labelNames: ["project", "queue"],
    registers: [registry],
    async collect() {
      this.reset();
      const queues = await prisma.queue.findMany({
        where: { concurrencyLimit: { not: null } },
        select: { projectId: true, name: true, concurrencyLimit: true },
      });
      for (const q of queues) this.set({ project: q.projectId, queue: q.name }, q.concurrencyLimit ?? 0);
    },
  });
  new Gauge({
    name: "spool_workers_online",
    help: "Online workers by deployment and mode (queue: in-cluster; push: remote)",
    labelNames: ["project", "deployment", "mode"],
    registers: [registry],
    async collect() {
      this.reset();
      const rows =
        await prisma.$queryRaw<{ projectId: string; deployment: string; mode: string; n: number }[]>(
          ONLINE_WORKERS,
        );
      for (const r of rows) this.set({ project: r.projectId, deployment: r.deployment, mode: r.mode }, r.n);
    },
  });
}
