import type { PrismaClient, pg } from "@spool/db";
import type { Logger } from "@spool/shared";
import type { Redis } from "ioredis";
import type { Dispatcher } from "./dispatch/dispatcher.js";
import type { FinishWatcher } from "./execution/finish-watcher.js";
import type { LaneLimits } from "./execution/lane-slots.js";
import type { EngineMetrics } from "./metrics/metrics.js";
import type { Traces } from "./traces/traces.js";

/** What engine functions need; built once by the Engine. */
export interface EngineDeps {
  prisma: PrismaClient;
  /** The same connections as `prisma`'s, for the hot path's raw SQL (one round trip per verb). */
  pool: pg.Pool;
  dispatcher: Dispatcher;
  logger: Logger;
  /** Announcements only (finished runs, publishes); never a source of truth. */
  redis: Redis;
  /** Who waits for runs to settle in this process (`?wait=`, push dispatchers); announcements wake them. */
  watcher: FinishWatcher;
  /** Transitions write the execution's spans in their own transaction (see traces/record-spans.ts). */
  traces: Traces;
  limits: EngineLimits;
  /** Lane limits as last read (1 s): ending a run looks there before handing its slot on. */
  laneLimits: LaneLimits;
  /** Counts what happens to runs and steps (NO_METRICS unless the app exposes them). */
  metrics: EngineMetrics;
}

/** Caps on what one project may hold (from the processes' configuration). */
export interface EngineLimits {
  maxQueuesPerProject: number;
}

/** Interactive transactions here are short, but wait behind row locks under load. */
export const TX_OPTIONS = { maxWait: 10_000, timeout: 20_000 } as const;
