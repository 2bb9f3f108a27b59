import type { PrismaClient, pg } from "@spool/db";
import type { DependencyStatus, Logger } from "@spool/shared";
import type { Redis } from "ioredis";
import type { EngineDeps, EngineLimits } from "./deps.js";
import { Dispatcher } from "./dispatch/dispatcher.js";
import { Events } from "./events/events.js";
import { Executions } from "./execution/executions.js";
import { FinishWatcher } from "./execution/finish-watcher.js";
import { LaneLimits } from "./execution/lane-slots.js";
import { type EngineMetrics, NO_METRICS } from "./metrics/metrics.js";
import { Projects } from "./projects/projects.js";
import { PushedRuns } from "./push/pushed-runs.js";
import { DEFAULT_MAX_QUEUES_PER_PROJECT } from "./registry/queue-cap.js";
import { Registry } from "./registry/registry.js";
import { RemoteRuns } from "./remote/remote-runs.js";
import { SessionMemories } from "./remote/session-memory.js";
import { ScheduleFiring } from "./schedules/fire-schedules.js";
import { Schedules } from "./schedules/schedules.js";
import { Sweeps } from "./sweeps/sweeps.js";
import { Traces } from "./traces/traces.js";
import { TriggerFiring } from "./triggers/fire-triggers.js";
import { Triggers } from "./triggers/triggers.js";
import { Workers } from "./workers/workers.js";

export interface EngineOptions {
  prisma: PrismaClient;
  /** The pool `prisma` runs on (createDatabase): the hot path queries it directly. */
  pool: pg.Pool;
  redis: Redis;
  redisUrl: string;
  logger: Logger;
  adminKey?: string;
  heartbeatIntervalSeconds?: number;
  /** The scheduler's notion of now (injectable so tests can run hours of cron in seconds). */
  clock?: () => Date;
  limits?: Partial<EngineLimits>;
  /** Where runs and steps are counted (the apps pass createPrometheusMetrics' registry-backed one). */
  metrics?: EngineMetrics;
}

/** A dependency's health: the kind of failure only (the driver's message is logged, not returned). */
export type DependencyCheck = DependencyStatus;

/**
 * The durable-execution core shared by api, worker and scheduler. Apps hold one Engine and call its
 * services; none of them writes domain state by itself.
 */
export class Engine {
  readonly prisma: PrismaClient;
  /** The pool `prisma` runs on, for raw SQL on hot paths. */
  readonly pool: pg.Pool;
  readonly redis: Redis;
  /** Where runs and steps are counted (NO_METRICS unless the app passed one). */
  readonly metrics: EngineMetrics;
  private readonly logger: Logger;
  readonly projects: Projects;
  readonly registry: Registry;
  readonly workers: Workers;
  readonly dispatcher: Dispatcher;
  readonly executions: Executions;
  readonly events: Events;
  readonly sweeps: Sweeps;
  readonly traces: Traces;
  readonly triggers: Triggers;
  readonly triggerFiring: TriggerFiring;
  readonly schedules: Schedules;
  readonly scheduleFiring: ScheduleFiring;
  /** The engine's side of the remote worker protocol (/internal routes). */
  readonly remote: RemoteRuns;
  /** Runs this process's push dispatcher holds, as started (the worker routes' shortcut). */
  readonly pushedRuns = new PushedRuns();
  /** This process's waiters for runs to settle (`?wait=`, push dispatchers). */
  private readonly watcher: FinishWatcher;
  readonly sessions: SessionMemories;

  constructor(options: EngineOptions) {
    this.prisma = options.prisma;
    this.pool = options.pool;
    this.metrics = options.metrics ?? NO_METRICS;
    this.redis = options.redis;
    this.logger = options.logger;
    this.dispatcher = new Dispatcher({ redisUrl: options.redisUrl, logger: options.logger });
    this.traces = new Traces(options.prisma, options.pool, options.logger);
    this.watcher = new FinishWatcher(options.redis);
    const deps: EngineDeps = {
      prisma: options.prisma,
      pool: options.pool,
      dispatcher: this.dispatcher,
      logger: options.logger,
      redis: options.redis,
      watcher: this.watcher,
      traces: this.traces,
      limits: { maxQueuesPerProject: options.limits?.maxQueuesPerProject ?? DEFAULT_MAX_QUEUES_PER_PROJECT },
      laneLimits: new LaneLimits(options.prisma),
      metrics: this.metrics,
    };
    this.projects = new Projects(options.prisma, options.adminKey);
    this.registry = new Registry(options.prisma, deps.limits);
    this.workers = new Workers(options.prisma, options.heartbeatIntervalSeconds ?? 10);
    this.events = new Events(deps);
    this.executions = new Executions(deps, this.events);
    this.sweeps = new Sweeps(deps);
    const clock = options.clock ?? (() => new Date());
    this.triggers = new Triggers(options.prisma, options.redis);
    this.triggerFiring = new TriggerFiring(deps);
    this.schedules = new Schedules(options.prisma, clock, options.redis);
    this.scheduleFiring = new ScheduleFiring(deps, clock);
    this.remote = new RemoteRuns(deps, this.executions, this.pushedRuns);
    this.sessions = new SessionMemories(options.prisma);
  }

  async close(): Promise<void> {
    this.watcher.close();
    await this.dispatcher.close();
    await this.traces.close();
  }

  /**
   * Liveness of both dependencies, each bounded so a hung dependency cannot hang the caller. The
   * result may be shown without auth (health endpoint), so a failure's detail, which can name hosts,
   * ports and users, only goes to the log.
   */
  async checkDependencies(timeoutMs = 2000): Promise<{ postgres: DependencyCheck; redis: DependencyCheck }> {
    const [postgres, redis] = await Promise.all([
      this.check("postgres", () => this.prisma.$queryRaw`SELECT 1`, timeoutMs),
      this.check("redis", () => this.redis.ping(), timeoutMs),
    ]);
    return { postgres, redis };
  }

  private async check(
    name: string,
    probe: () => Promise<unknown>,
    timeoutMs: number,
  ): Promise<DependencyCheck> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = Symbol("timed out");
    const timeout = new Promise<typeof timedOut>((resolve) => {
      timer = setTimeout(() => resolve(timedOut), timeoutMs);
    });
    try {
      if ((await Promise.race([probe(), timeout])) === timedOut) {
        this.logger.warn({ dependency: name, timeout_ms: timeoutMs }, "dependency check timed out");
        return "error: timeout";
      }
      return "ok";
    } catch (err) {
      this.logger.warn(
        { dependency: name, err: err instanceof Error ? err.message : String(err) },
        "dependency check failed",
      );
      return "error: unreachable";
    } finally {
      clearTimeout(timer);
    }
  }
}
