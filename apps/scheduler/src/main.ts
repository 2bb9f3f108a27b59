import { createDatabase } from "@spool/db";
import {
  Engine,
  exportSpansIfConfigured,
  OrphanedJobs,
  processMetrics,
  SCHEDULES_CHANNEL,
  TRIGGERS_CHANNEL,
} from "@spool/engine";
import {
  createLogger,
  DatabaseUrl,
  LogLevel,
  loadConfig,
  MetricsHost,
  MetricsPort,
  RedisUrl,
} from "@spool/shared";
import { Redis } from "ioredis";
import { z } from "zod";
import { createClock, realMsUntil } from "./clock.js";
import { startLoop } from "./loop.js";
import { listenForPublishes } from "./trigger-listener.js";

const config = loadConfig(
  z.object({
    DATABASE_URL: DatabaseUrl,
    REDIS_URL: RedisUrl,
    SPOOL_SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).default(2000),
    SPOOL_ORPHANED_JOBS_CHECK_MS: z.coerce.number().int().min(50).default(500),
    SPOOL_ORPHANED_JOB_GRACE_MS: z.coerce.number().int().min(500).default(5000),
    SPOOL_QUEUED_GRACE_MS: z.coerce.number().int().min(0).default(5000),
    // At most setTimeout's longest delay: a longer one fires at once.
    SPOOL_TRIGGER_CHECK_INTERVAL_MS: z.coerce.number().int().min(20).max(2_147_483_647).default(5000),
    SPOOL_SCHEDULE_CHECK_INTERVAL_MS: z.coerce.number().int().min(20).max(2_147_483_647).default(10_000),
    SPOOL_CLOCK_SPEED: z.coerce.number().positive().optional(),
    SPOOL_CLOCK_EPOCH_MS: z.coerce.number().int().optional(),
    SPOOL_METRICS_PORT: MetricsPort,
    SPOOL_METRICS_HOST: MetricsHost,
    SPOOL_LOG_LEVEL: LogLevel,
  }),
);

const logger = createLogger("scheduler", config.SPOOL_LOG_LEVEL);
const clock = createClock(config.SPOOL_CLOCK_SPEED, config.SPOOL_CLOCK_EPOCH_MS);
const { prisma, pool } = createDatabase({ databaseUrl: config.DATABASE_URL, maxConnections: 5 });
const redis = new Redis(config.REDIS_URL, { maxRetriesPerRequest: 1 });
redis.on("error", (err) => logger.warn({ err: err.message }, "redis connection error"));
const subscriber = new Redis(config.REDIS_URL, { maxRetriesPerRequest: null });
subscriber.on("error", (err) => logger.debug({ err: err.message }, "redis subscriber connection error"));
const { metrics, server: metricsServer } = processMetrics({
  port: config.SPOOL_METRICS_PORT,
  host: config.SPOOL_METRICS_HOST,
  logger,
});
const engine = new Engine({ prisma, pool, redis, redisUrl: config.REDIS_URL, logger, clock, metrics });
exportSpansIfConfigured(engine.traces, { serviceName: "spool-scheduler", logger });

const orphanedJobs = new OrphanedJobs(redis, engine.dispatcher, engine.pool, logger, {
  graceMs: config.SPOOL_ORPHANED_JOB_GRACE_MS,
});

// Lane limits live in Postgres now; a limit an earlier version left on a BullMQ queue must go.
void engine.sweeps
  .removeLegacyQueueLimits()
  .catch((err) => logger.warn({ err: String(err) }, "legacy queue limits not removed"));

const loops = [
  startLoop({
    name: "sweeps",
    intervalMs: config.SPOOL_SWEEP_INTERVAL_MS,
    logger,
    tick: async () => {
      const report = await engine.sweeps.runAll({ queuedGraceMs: config.SPOOL_QUEUED_GRACE_MS });
      if (Object.values(report).some((n) => n > 0)) logger.info(report, "swept");
      // Runs a publish was to wake after answering, left by a process that stopped or was busy.
      const woken = await engine.events.settleLeftovers();
      if (woken) logger.info({ woken }, "woke runs of earlier publishes");
    },
  }),
  // Jobs of a worker (or API) that died go back to their queue at once, not when their locks expire;
  // runs an API that died pushed without jobs get theirs.
  startLoop({
    name: "orphaned-jobs",
    intervalMs: config.SPOOL_ORPHANED_JOBS_CHECK_MS,
    logger,
    tick: async () => {
      await orphanedJobs.check();
    },
  }),
];
// Partial batches as they time out (the tick says when the first one does; a publish may begin
// another), and full ones whose announcement was lost (every interval, when nothing else wakes it).
const triggers = startLoop({
  name: "triggers",
  intervalMs: config.SPOOL_TRIGGER_CHECK_INTERVAL_MS,
  minGapMs: 200,
  logger,
  tick: async () => {
    const fired = await engine.triggerFiring.fireDue();
    if (fired) logger.info({ fired }, "trigger batches fired");
    const due = await engine.triggerFiring.nextDue();
    return due ? due.getTime() - Date.now() : undefined;
  },
});
// Cron occurrences as they fall due (the tick says when the next one does; a schedule created or
// changed is announced), and buffered ones, which wait for a run to finish, every half second.
const schedules = startLoop({
  name: "schedules",
  intervalMs: config.SPOOL_SCHEDULE_CHECK_INTERVAL_MS,
  minGapMs: 500,
  logger,
  tick: async () => {
    const fired = await engine.scheduleFiring.fireDue(clock());
    if (fired) logger.info({ fired }, "schedules fired");
    const due = await engine.scheduleFiring.nextDue();
    if (due.buffered) return 0;
    return due.at ? realMsUntil(due.at, clock, config.SPOOL_CLOCK_SPEED) : undefined;
  },
});
loops.push(triggers, schedules);
subscriber.on("message", (channel: string) => {
  if (channel === SCHEDULES_CHANNEL) schedules.wake();
  else if (channel === TRIGGERS_CHANNEL) triggers.wake();
});
const publishes = listenForPublishes(engine, subscriber, logger, () => triggers.wake());
logger.info({ sweep_interval_ms: config.SPOOL_SWEEP_INTERVAL_MS }, "scheduler started");
// What was announced before the subscriptions took (or while Redis was away: a reconnected
// subscriber is subscribed again, but what was sent meanwhile is gone) is looked for at once.
const lookAgain = () => {
  triggers.wake();
  schedules.wake();
};
subscriber.on("ready", lookAgain);
// From then on a publish or a change is seen at once.
Promise.all([
  publishes.subscribed,
  subscriber.subscribe(SCHEDULES_CHANNEL, TRIGGERS_CHANNEL),
  triggers.firstTick,
  schedules.firstTick,
]).then(
  () => {
    lookAgain();
    logger.info("listening for announcements");
  },
  (err: Error) => logger.warn({ err: err.message }, "subscribe failed"),
);

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, "shutting down");
  await Promise.all(loops.map((l) => l.stop()));
  await publishes.stop();
  metricsServer?.close();
  await Promise.allSettled([engine.close(), prisma.$disconnect().then(() => pool.end()), redis.quit()]);
  logger.info("stopped");
  process.exit(0);
}
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));
