import { fileURLToPath } from "node:url";
import { createPrisma } from "@spool/db";
import { Engine, exportSpansIfConfigured } from "@spool/engine";
import { createClient } from "@spool/sdk";
import { createLogger, DatabaseUrl, LogLevel, loadConfig, RedisUrl } from "@spool/shared";
import { Redis } from "ioredis";
import { z } from "zod";
import { Consumer } from "./consumer.js";
import { loadWorkflows } from "./load-workflows.js";
import { registerDeclared } from "./register-declared.js";
import { queuesOf, registerWorker, startHeartbeat } from "./registration.js";

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
    SPOOL_WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(10),
    SPOOL_DRAIN_TIMEOUT_MS: z.coerce.number().int().min(0).default(10_000),
    SPOOL_JOB_LOCK_MS: z.coerce.number().int().min(1000).default(30_000),
    SPOOL_LOG_LEVEL: LogLevel,
  }),
);

const logger = createLogger("worker", config.SPOOL_LOG_LEVEL);
const loaded = await loadWorkflows(config.SPOOL_WORKFLOWS_MODULE);
const prisma = createPrisma({ databaseUrl: config.DATABASE_URL });
const redis = new Redis(config.REDIS_URL, { maxRetriesPerRequest: null });
redis.on("error", (err) => logger.warn({ err: err.message }, "redis connection error"));
const engine = new Engine({ prisma, redis, redisUrl: config.REDIS_URL, logger });
// Spans are stored in Postgres; with a collector configured, they are also exported over OTLP/HTTP.
exportSpansIfConfigured(engine.traces, { serviceName: "spool-worker", logger });
const client = createClient({
  baseUrl: config.SPOOL_API_URL,
  apiKey: config.SPOOL_API_KEY,
  projectId: config.SPOOL_PROJECT_ID,
});

const registration = {
  deploymentId: config.SPOOL_DEPLOYMENT_ID,
  loaded,
  maxConcurrent: config.SPOOL_WORKER_CONCURRENCY,
};
let { workerId, heartbeatIntervalSeconds } = await registerWorker(client, registration);
await registerDeclared(client, {
  deploymentId: config.SPOOL_DEPLOYMENT_ID,
  workflows: loaded.workflows.values(),
  logger,
});
logger.info(
  { worker_id: workerId, deployment_id: config.SPOOL_DEPLOYMENT_ID, workflows: [...loaded.workflows.keys()] },
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
});
consumer.start();

const stopHeartbeat = startHeartbeat({
  client,
  logger,
  intervalSeconds: heartbeatIntervalSeconds,
  workerId: () => workerId,
  running: () => consumer.inFlight.size,
  reRegister: async () => {
    ({ workerId, heartbeatIntervalSeconds } = await registerWorker(client, registration));
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
  await Promise.allSettled([engine.close(), prisma.$disconnect(), redis.quit()]);
  logger.info(drained, "stopped");
  process.exit(0);
}
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));
