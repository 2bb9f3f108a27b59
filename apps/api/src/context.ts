import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Engine, Principal } from "@spool/engine";
import type { Logger } from "@spool/shared";
import type { PerKeySlots } from "./limits/per-key-slots.js";
import type { RateLimiter } from "./limits/rate-limiter.js";
import type { ApiMetrics } from "./metrics.js";

/** Per-key limits of this API process (see limits/). */
export interface ApiLimits {
  rate: RateLimiter;
  /** `?wait=` long polls a key holds open at once. */
  longPolls: PerKeySlots;
  /** Event streams a key holds open at once. */
  streams: PerKeySlots;
}

/** Read with `c.get(name)`: Hono's `c.var` copies every variable into a new object on each read. */
export interface ApiVariables {
  engine: Engine;
  limits: ApiLimits;
  metrics: ApiMetrics;
  logger: Logger;
  principal: Principal;
  /** Set on project-scoped routes once X-Project-ID has been checked against the principal. */
  projectId: string;
}

export type ApiEnv = { Variables: ApiVariables };
export type App = OpenAPIHono<ApiEnv>;
