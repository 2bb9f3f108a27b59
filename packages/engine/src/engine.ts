import type { PrismaClient } from "@spool/db";
import type { Logger } from "@spool/shared";
import type { Redis } from "ioredis";
import type { EngineDeps } from "./deps.js";
import { Dispatcher } from "./dispatch/dispatcher.js";
import { Events } from "./events/events.js";
import { Executions } from "./execution/executions.js";
import { Projects } from "./projects/projects.js";
import { Registry } from "./registry/registry.js";
import { ScheduleFiring } from "./schedules/fire-schedules.js";
import { Schedules } from "./schedules/schedules.js";
import { Sweeps } from "./sweeps/sweeps.js";
import { Traces } from "./traces/traces.js";
import { TriggerFiring } from "./triggers/fire-triggers.js";
import { Triggers } from "./triggers/triggers.js";
import { Workers } from "./workers/workers.js";

export interface EngineOptions {
  prisma: PrismaClient;
  redis: Redis;
  redisUrl: string;
  logger: Logger;
  adminKey?: string;
  heartbeatIntervalSeconds?: number;
  /** The scheduler's notion of now (injectable so tests can run hours of cron in seconds). */
  clock?: () => Date;
}

export type DependencyCheck = "ok" | `error: ${string}`;

/**
 * The durable-execution core shared by api, worker and scheduler. Apps hold one Engine and call its
 * services; none of them writes domain state by itself.
 */
export class Engine {
  readonly prisma: PrismaClient;
  readonly redis: Redis;
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

  constructor(options: EngineOptions) {
    this.prisma = options.prisma;
    this.redis = options.redis;
    this.dispatcher = new Dispatcher({ redisUrl: options.redisUrl, logger: options.logger });
    this.traces = new Traces(options.prisma, options.logger);
    const deps: EngineDeps = {
      prisma: options.prisma,
      dispatcher: this.dispatcher,
      logger: options.logger,
      redis: options.redis,
      traces: this.traces,
    };
    this.projects = new Projects(options.prisma, options.adminKey);
    this.registry = new Registry(options.prisma, this.dispatcher);
    this.workers = new Workers(options.prisma, options.heartbeatIntervalSeconds ?? 10);
    this.executions = new Executions(deps);
    this.events = new Events(deps);
    this.sweeps = new Sweeps(deps);
    const clock = options.clock ?? (() => new Date());
    this.triggers = new Triggers(options.prisma);
    this.triggerFiring = new TriggerFiring(deps);
    this.schedules = new Schedules(options.prisma, clock);
    this.scheduleFiring = new ScheduleFiring(deps, clock);
  }

  async close(): Promise<void> {
    this.executions.close();
    await this.dispatcher.close();
    await this.traces.close();
  }

  /** Liveness of both dependencies, each bounded so a hung dependency cannot hang the caller. */
  async checkDependencies(timeoutMs = 2000): Promise<{ postgres: DependencyCheck; redis: DependencyCheck }> {
    const [postgres, redis] = await Promise.all([
      check(() => this.prisma.$queryRaw`SELECT 1`, timeoutMs),
      check(() => this.redis.ping(), timeoutMs),
    ]);
    return { postgres, redis };
  }
}

async function check(probe: () => Promise<unknown>, timeoutMs: number): Promise<DependencyCheck> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([probe(), timeout]);
    return "ok";
  } catch (err) {
    return `error: ${err instanceof Error ? err.message.split("\n")[0] : String(err)}`;
  } finally {
    clearTimeout(timer);
  }
}
