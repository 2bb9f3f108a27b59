import { createDatabase } from "@spool/db";
import {
  collectRuntimeMetrics,
  createPrometheusMetrics,
  DEFAULT_MAX_QUEUES_PER_PROJECT,
  Engine,
  exportSpansIfConfigured,
  InClusterSender,
  PushDispatcher,
} from "@spool/engine";
import { setMaxResultBytes } from "@spool/engine/runner";
import { createLogger, DatabaseUrl, LogLevel, loadConfig, MaxStepResultBytes, RedisUrl } from "@spool/shared";
import { Redis } from "ioredis";
import { Registry } from "prom-client";
import { z } from "zod";
import { createApp, DEFAULT_LIMITS } from "./app.js";
import { listen } from "./server.js";
import { createEventHub } from "./streaming/event-hub.js";

const config = loadConfig(
  z.object({
    DATABASE_URL: DatabaseUrl,
    REDIS_URL: RedisUrl,
    PORT: z.coerce.number().int().min(0).max(65535).default(8080),
    HOST: z.string().default("0.0.0.0"),
    SPOOL_ADMIN_KEY: z.string().min(32, "must be at least 32 characters").optional(),
    SPOOL_MAX_BODY_BYTES: z.coerce
      .number()
      .int()
      .min(1024)
      .default(1024 * 1024),
    SPOOL_HEARTBEAT_INTERVAL_SECONDS: z.coerce.number().int().min(1).max(3600).default(10),
    // Per API key: requests per second across API processes (0: unlimited), and what one key may
    // hold open at once in this process.
    SPOOL_RATE_LIMIT_PER_SECOND: z.coerce.number().int().min(0).default(DEFAULT_LIMITS.ratePerSecond),
    SPOOL_MAX_LONG_POLLS_PER_KEY: z.coerce.number().int().min(1).default(DEFAULT_LIMITS.longPollsPerKey),
    SPOOL_MAX_STREAMS_PER_KEY: z.coerce.number().int().min(1).default(DEFAULT_LIMITS.streamsPerKey),
    SPOOL_MAX_STEP_RESULT_BYTES: MaxStepResultBytes,
    SPOOL_MAX_QUEUES_PER_PROJECT: z.coerce.number().int().min(1).default(DEFAULT_MAX_QUEUES_PER_PROJECT),
    // This process pushes runs to remote (push) workers; turn off on API replicas that should not.
    SPOOL_PUSH_DISPATCH: z.enum(["true", "false"]).default("true"),
    SPOOL_PUSH_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
    SPOOL_LOG_LEVEL: LogLevel,
  }),
);

// Remote workers report step and run results here: none over this size is stored.
setMaxResultBytes(config.SPOOL_MAX_STEP_RESULT_BYTES);
const logger = createLogger("api", config.SPOOL_LOG_LEVEL);
const { prisma, pool } = createDatabase({ databaseUrl: config.DATABASE_URL });
const redis = new Redis(config.REDIS_URL, { maxRetriesPerRequest: 1, lazyConnect: false });
// One warning per outage, not one per reconnect attempt (ioredis retries every 2 s at most).
let redisDown = false;
redis.on("error", (err) => {
  logger[redisDown ? "debug" : "warn"]({ err: err.message }, "redis connection error");
  redisDown = true;
});
redis.on("ready", () => {
  if (redisDown) logger.info("redis connection restored");
  redisDown = false;
});
// One registry for the engine's run and step metrics and the API's own, served at /metrics.
const metricsRegistry = new Registry();
collectRuntimeMetrics(metricsRegistry);
const engine = new Engine({
  metrics: createPrometheusMetrics(metricsRegistry),
  prisma,
  pool,
  redis,
  redisUrl: config.REDIS_URL,
  logger,
  adminKey: config.SPOOL_ADMIN_KEY,
  heartbeatIntervalSeconds: config.SPOOL_HEARTBEAT_INTERVAL_SECONDS,
  limits: { maxQueuesPerProject: config.SPOOL_MAX_QUEUES_PER_PROJECT },
});
exportSpansIfConfigured(engine.traces, { serviceName: "spool-api", logger });
if (!config.SPOOL_ADMIN_KEY)
  logger.warn("SPOOL_ADMIN_KEY is not set: projects can only be created by an admin key");

const eventHub = createEventHub(engine, config.REDIS_URL, logger);
const pushDispatcher =
  config.SPOOL_PUSH_DISPATCH === "true"
    ? new PushDispatcher(engine, { logger, pushTimeoutMs: config.SPOOL_PUSH_TIMEOUT_MS })
    : null;
pushDispatcher?.start();
// New runs of workflows in-cluster worker processes serve go to them without jobs.
const inClusterSender = new InClusterSender(engine, { logger });
inClusterSender.start();
const app = createApp({
  engine,
  eventHub,
  logger,
  maxBodyBytes: config.SPOOL_MAX_BODY_BYTES,
  metricsRegistry,
  limits: {
    ratePerSecond: config.SPOOL_RATE_LIMIT_PER_SECOND,
    longPollsPerKey: config.SPOOL_MAX_LONG_POLLS_PER_KEY,
    streamsPerKey: config.SPOOL_MAX_STREAMS_PER_KEY,
  },
});
const server = listen(app, { port: config.PORT, hostname: config.HOST }, (port) => {
  logger.info({ port, url: `http://127.0.0.1:${port}/api/v1` }, "api listening");
});

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, "shutting down: finishing in-flight requests");
  // Stop accepting, let in-flight requests finish, then release connections.
  await new Promise<void>((resolve) => server.close(() => resolve()));
  // Runs out on remote workers stay there; another API process adopts their jobs.
  await Promise.all([pushDispatcher?.stop(), inClusterSender.stop()]);
  await Promise.allSettled([
    eventHub.close(),
    engine.close(),
    prisma.$disconnect().then(() => pool.end()),
    redis.quit(),
  ]);
  logger.info("stopped");
  process.exit(0);
}
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));
