import type { Execution } from "@spool/db";
import { Counter, Histogram, type Registry } from "prom-client";

/**
 * What the engine tells about runs and steps as they happen, after the commit that made it so.
 * Each process counts what it did itself (the API the runs it created or started on a worker, the
 * worker the runs it took from their jobs and finished): Prometheus adds up the processes it scrapes.
 */
export interface EngineMetrics {
  runsCreated(runs: readonly Pick<Execution, "projectId" | "workflowId" | "queueName">[]): void;
  /**
   * Every start, told by the process whose statement made it; the first one (lease 1) also measures
   * the queue wait. So each run's wait is counted once, even when its first start never ran (a push
   * or publish that reached nobody, given back to its job: that job's start has lease 2).
   */
  runStarted(run: Execution): void;
  runFinished(run: Execution): void;
  runRetried(run: Execution): void;
  stepFinished(kind: string, durationMs: number): void;
  pushed(outcome: "accepted" | "busy" | "failed" | "mismatch"): void;
}

export const NO_METRICS: EngineMetrics = {
  runsCreated() {},
  runStarted() {},
  runFinished() {},
  runRetried() {},
  stepFinished() {},
  pushed() {},
};

const RUN_LABELS = ["project", "workflow", "queue"] as const;
const labelsOf = (e: Pick<Execution, "projectId" | "workflowId" | "queueName">) => ({
  project: e.projectId,
  workflow: e.workflowId,
  queue: e.queueName,
});
const seconds = (from: Date, to: Date) => Math.max(0, (to.getTime() - from.getTime()) / 1000);

/** Buckets from a few milliseconds (a step, a pickup) to an hour (a long run). */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];

/** The engine's metrics on a prom-client registry (the app serves it at /metrics). */
export function createPrometheusMetrics(registry: Registry): EngineMetrics {
  const counter = (name: string, help: string) =>
    new Counter({ name, help, labelNames: RUN_LABELS, registers: [registry] });
  const started = counter("spool_runs_started_total", "Runs started (created and queued)");
  const completed = counter("spool_runs_completed_total", "Runs that completed");
  const failed = counter("spool_runs_failed_total", "Runs that failed for good");
  const cancelled = counter("spool_runs_cancelled_total", "Runs cancelled");
  const retried = counter("spool_runs_retried_total", "Failed attempts of runs queued again for a retry");
  const duration = new Histogram({
    name: "spool_run_duration_seconds",
    help: "From a run's creation to its end, by how it ended",
    labelNames: [...RUN_LABELS, "status"],
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  const queueWait = new Histogram({
    name: "spool_run_queue_wait_seconds",
    help: "From a run's creation to its first start on a worker",
    labelNames: RUN_LABELS,
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  const step = new Histogram({
    name: "spool_step_duration_seconds",
    help: "A step's function, from its start to its stored result, by kind (run, llm, tool, ...)",
    labelNames: ["kind"],
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  const pushes = new Counter({
    name: "spool_pushes_total",
    help: "Runs pushed to remote workers, by the worker's answer",
    labelNames: ["outcome"],
    registers: [registry],
  });
  const ended = { completed, failed, cancelled } as Record<string, Counter<(typeof RUN_LABELS)[number]>>;
  return {
    runsCreated(runs) {
      for (const e of runs) started.inc(labelsOf(e));
    },
    runStarted(e) {
      if (e.lease === 1) queueWait.observe(labelsOf(e), seconds(e.createdAt, e.startedAt ?? new Date()));
    },
    runFinished(e) {
      ended[e.status]?.inc(labelsOf(e));
      duration.observe(
        { ...labelsOf(e), status: e.status },
        seconds(e.createdAt, e.completedAt ?? e.cancelledAt ?? new Date()),
      );
    },
    runRetried(e) {
      retried.inc(labelsOf(e));
    },
    stepFinished(kind, ms) {
      step.observe({ kind }, ms / 1000);
    },
    pushed(outcome) {
      pushes.inc({ outcome });
    },
  };
}
