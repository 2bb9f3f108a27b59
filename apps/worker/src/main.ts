import { hostname } from "node:os";
import { fileURLToPath } from "node:url";
import { createDatabase } from "@spool/db";
import { Engine, exportSpansIfConfigured, processMetrics } from "@spool/engine";
import { setMaxResultBytes } from "@spool/engine/runner";
import { createClient } from "@spool/sdk";
import {
  capabilitiesOf,
  queuesOf,
  registerDeclared,
  registerDefinitions,
  startHeartbeat,
} from "@spool/sdk/internal";
import {
  createLogger,
  DatabaseUrl,
  LogLevel,
  loadConfig,
  MaxStepResultBytes,
  MetricsHost,
  MetricsPort,
  RedisUrl,
} from "@spool/shared";
import { Redis } from "ioredis";
import { z } from "zod";
import { Consumer } from "./consumer.js";
import { loadWorkflows } from "./load-workflows.js";

const EXAMPLES = fileURLToPath(new URL("../../../examples/index.ts", import.meta.url));

const config = loadConfig(
  z.object({
    DATABASE_URL: DatabaseUrl,
    REDIS_URL: RedisUrl,
    SPOOL_API_URL: z.url({ error: "is required: the API's base URL, e.g. http://127.0.0.1:8080" }),
    SPOOL_API_KEY: z.string({ error: "is required: a project API key (sk_...)" }).min(10),
    SPOOL_PROJECT_ID: z.uuid({ error: "is required: the project id the key belongs to" }),
    SPOOL_WORKFLOWS_MODULE: z.string().default(EXAMPLES),
    SPOOL_DEPLOYMENT_ID: z
      .string()
      .regex(/^[A-Za-z0-9._:/-]{1,200}$/)
      .default("default"),
    // Runs are mostly waiting (on a model, a tool, the database): many share one process well, and
    // the more wait together, the more of their writes share a commit (group commit, @spool/db).
    SPOOL_WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(32),
    SPOOL_DRAIN_TIMEOUT_MS: z.coerce.number().int().min(0).default(10_000),
    SPOOL_JOB_LOCK_MS: z.coerce.number().int().min(1000).default(30_000),
    // APIs start new runs on this process and send them over Redis, without BullMQ jobs (fewer round
    // trips per run); "false" leaves every run to the queues.
    SPOOL_WORKER_DIRECT_RUNS: z.enum(["true", "false"]).default("true"),
    SPOOL_MAX_STEP_RESULT_BYTES: MaxStepResultBytes,
    SPOOL_METRICS_PORT: MetricsPort,
    SPOOL_METRICS_HOST: MetricsHost,
    SPOOL_LOG_LEVEL: LogLevel,
  }),
);
// The runs this worker replays store their step and run results in Postgres: none over this size.
setMaxResultBytes(config.SPOOL_MAX_STEP_RESULT_BYTES);

const logger = createLogger("worker", config.SPOOL_LOG_LEVEL);
const loaded = await loadWorkflows(config.SPOOL_WORKFLOWS_MODULE);
const { prisma, pool } = createDatabase({ databaseUrl: config.DATABASE_URL });
const redis = new Redis(config.REDIS_URL, { maxRetriesPerRequest: null });
redis.on("error", (err) => logger.warn({ err: err.message }, "redis connection error"));
const { metrics, server: metricsServer } = processMetrics({
  port: config.SPOOL_METRICS_PORT,
  host: config.SPOOL_METRICS_HOST,
  logger,
});
const engine = new Engine({ prisma, pool, redis, redisUrl: config.REDIS_URL, logger, metrics });
// Spans are stored in Postgres; with a collector configured, they are also exported over OTLP/HTTP.
exportSpansIfConfigured(engine.traces, { serviceName: "spool-worker", logger });
const client = createClient({
  baseUrl: config.SPOOL_API_URL,
  apiKey: config.SPOOL_API_KEY,
  projectId: config.SPOOL_PROJECT_ID,
});

const deploymentId = config.SPOOL_DEPLOYMENT_ID;

/** Registers what this worker hosts, then the worker itself (mode "queue": it consumes BullMQ). */
async function registerWorker() {
  await registerDefinitions(client.request, { deploymentId, definitions: loaded });
  const registered = await client.request<{ worker_id: string; heartbeat_interval_seconds: number }>(
    "POST",
    "/workers/register",
    {
      deployment_id: deploymentId,
      mode: "queue",
      hostname: hostname(),
      max_concurrent_executions: config.SPOOL_WORKER_CONCURRENCY,
      capabilities: capabilitiesOf(loaded),
    },
  );
  return { workerId: registered.worker_id, heartbeatIntervalSeconds: registered.heartbeat_interval_seconds };
}

let { workerId, heartbeatIntervalSeconds } = await registerWorker();
await registerDeclared(client.request, { deploymentId, definitions: loaded, logger });
logger.info(
  { worker_id: workerId, deployment_id: deploymentId, workflows: [...loaded.workflows.keys()] },
  "registered",
);

const consumer = new Consumer({
  engine,
  projectId: config.SPOOL_PROJECT_ID,
  queues: queuesOf(loaded),
  workflows: loaded.workflows,
  workerId: () => workerId,
  logger,
  concurrency: config.SPOOL_WORKER_CONCURRENCY,
  lockDurationMs: config.SPOOL_JOB_LOCK_MS,
  directRuns: config.SPOOL_WORKER_DIRECT_RUNS === "true",
});
await consumer.start();

const stopHeartbeat = startHeartbeat({
  request: client.request,
  logger,
  intervalSeconds: heartbeatIntervalSeconds,
  workerId: () => workerId,
  running: () => consumer.inFlight.size,
  reRegister: async () => {
    ({ workerId, heartbeatIntervalSeconds } = await registerWorker());
  },
});

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  logger.info({ signal, in_flight: consumer.inFlight.size }, "draining");
  const drained = await consumer.drain(config.SPOOL_DRAIN_TIMEOUT_MS);
  stopHeartbeat();
  await client.request("POST", `/workers/${workerId}/deregister`).catch(() => {});
  metricsServer?.close();
  await Promise.allSettled([engine.close(), prisma.$disconnect().then(() => pool.end()), redis.quit()]);
  logger.info(drained, "stopped");
  process.exit(0);
}
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));
