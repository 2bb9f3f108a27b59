import { OpenAPIHono } from "@hono/zod-openapi";
import type { Engine } from "@spool/engine";
import { type Logger, SpoolError } from "@spool/shared";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { routePath } from "hono/route";
import { Registry } from "prom-client";
import type { ApiEnv, ApiLimits, App } from "./context.js";
import { registerDashboard } from "./dashboard.js";
import { registerDocs } from "./docs.js";
import { errorJson, onError, validationHook } from "./errors.js";
import { PerKeySlots } from "./limits/per-key-slots.js";
import { RateLimiter } from "./limits/rate-limiter.js";
import { createApiMetrics } from "./metrics.js";
import { authenticate, checkOptionalProjectHeader, requireProject } from "./middleware/auth.js";
import { limitBody, requireJsonBody } from "./middleware/body.js";
import { registerAgentsAndTools } from "./routes/agents-tools.js";
import { registerEvents } from "./routes/events.js";
import { registerExecutions } from "./routes/executions.js";
import { registerHealth } from "./routes/health.js";
import { registerInternalExecutions } from "./routes/internal-executions.js";
import { registerInternalSessions } from "./routes/internal-sessions.js";
import { registerMetrics } from "./routes/metrics.js";
import { registerProjects } from "./routes/projects.js";
import { registerRegistry } from "./routes/registry.js";
import { registerSchedules } from "./routes/schedules.js";
import { registerSession } from "./routes/session.js";
import { registerTraces } from "./routes/traces.js";
import { registerTriggers } from "./routes/triggers.js";
import { registerWorkers } from "./routes/workers.js";
import type { EventHub } from "./streaming/event-hub.js";
import { VERSION } from "./version.js";

export interface AppOptions {
  engine: Engine;
  /** Live event fan-out for SSE; a process builds one (it holds a Redis subscriber connection). */
  eventHub: EventHub;
  logger: Logger;
  /** Largest accepted request body (contract default: 1 MiB). */
  maxBodyBytes?: number;
  /** SSE keep-alive comment interval (contract: 15 s). */
  sseKeepaliveMs?: number;
  limits?: Partial<LimitOptions>;
  /** The built dashboard (default: apps/dashboard/dist). */
  dashboardDist?: string;
  /** Where /metrics reads from: the engine's metrics (createPrometheusMetrics) share it. */
  metricsRegistry?: Registry;
}

export interface LimitOptions {
  /** Requests per second one key may make, across API processes (0: unlimited). */
  ratePerSecond: number;
  /** `?wait=` long polls one key may hold open at once in one API process. */
  longPollsPerKey: number;
  /** Event streams one key may hold open at once in one API process. */
  streamsPerKey: number;
}

export const DEFAULT_LIMITS: LimitOptions = { ratePerSecond: 1000, longPollsPerKey: 200, streamsPerKey: 100 };

const PUBLIC_PATHS = [
  /^\/health$/,
  /^\/api\/v1\/health$/,
  /^\/api\/v1\/openapi\.json$/,
  /^\/api\/v1\/docs(\/|$)/,
];
/** Signing in and out need no key; who is signed in does. */
const isSessionChange = (method: string, path: string) => path === "/api/v1/session" && method !== "GET";
/** Routes that name their project in the path, or need none: X-Project-ID is optional there. */
const PROJECT_ADMIN_PATHS = /^\/api\/v1\/(projects(\/|$)|session$)/;

/**
 * Who may call what: public paths need nothing; /projects routes check the path's project
 * themselves; every other /api/v1 route is project-scoped through X-Project-ID.
 */
const access = createMiddleware<ApiEnv>(async (c, next) => {
  const path = c.req.path;
  if (PUBLIC_PATHS.some((p) => p.test(path)) || isSessionChange(c.req.method, path)) return next();
  await authenticate(c, async () => {
    limitRate(c);
    await (PROJECT_ADMIN_PATHS.test(path) ? checkOptionalProjectHeader : requireProject)(c, next);
  });
});

/** 429 with Retry-After for a project key past its requests per second (the admin key is not limited). */
function limitRate(c: Context<ApiEnv>): void {
  const principal = c.get("principal");
  if (principal.kind !== "project") return;
  const wait = c.get("limits").rate.take(principal.keyId);
  if (wait > 0) {
    c.header("Retry-After", String(wait));
    throw new SpoolError(
      "RATE_LIMITED",
      "too many requests for this API key; retry after Retry-After seconds",
    );
  }
}

export function createApp(options: AppOptions): App {
  const { engine, eventHub, logger, maxBodyBytes = 1024 * 1024, sseKeepaliveMs = 15_000 } = options;
  const app: App = new OpenAPIHono<ApiEnv>({ defaultHook: validationHook });
  const limitOptions = { ...DEFAULT_LIMITS, ...options.limits };
  const limits: ApiLimits = {
    rate: new RateLimiter(engine.redis, logger, { perSecond: limitOptions.ratePerSecond }),
    longPolls: new PerKeySlots(limitOptions.longPollsPerKey),
    streams: new PerKeySlots(limitOptions.streamsPerKey),
  };

  const metrics = createApiMetrics(options.metricsRegistry ?? new Registry(), engine.prisma);

  app.use("*", async (c, next) => {
    c.set("engine", engine);
    c.set("limits", limits);
    c.set("logger", logger);
    c.set("metrics", metrics);
    const started = performance.now();
    await next();
    metrics.observeRequest(
      c.req.method,
      routePath(c, -1),
      c.res.status,
      (performance.now() - started) / 1000,
    );
    logger.debug(
      {
        method: c.req.method,
        path: c.req.path,
        status: c.res.status,
        ms: Math.round(performance.now() - started),
      },
      "request",
    );
  });
  app.use("/api/v1/*", limitBody(maxBodyBytes), requireJsonBody, access);
  // Routes for remote workers: project-scoped like /api/v1, outside the public API path.
  app.use("/internal/*", limitBody(maxBodyBytes), requireJsonBody, authenticate, requireProject);

  registerHealth(app);
  registerSession(app);
  registerProjects(app);
  registerRegistry(app);
  registerAgentsAndTools(app);
  registerWorkers(app);
  registerExecutions(app);
  registerEvents(app, eventHub, sseKeepaliveMs);
  registerTriggers(app);
  registerSchedules(app);
  registerTraces(app);
  registerInternalExecutions(app);
  registerInternalSessions(app);
  registerDocs(app);
  registerMetrics(app);
  // Last: the dashboard answers the GETs no API route took.
  registerDashboard(app, options.dashboardDist);

  app.openAPIRegistry.registerComponent("securitySchemes", "bearer_auth", {
    type: "http",
    scheme: "bearer",
    description: "API key: `Authorization: Bearer sk_...`",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "cookie_auth", {
    type: "apiKey",
    in: "cookie",
    name: "service_auth",
    description: "API key in the `service_auth` cookie",
  });
  app.doc31("/api/v1/openapi.json", {
    openapi: "3.1.0",
    info: {
      title: "Spool API",
      version: VERSION,
      description:
        "Durable execution of AI-agent workflows. Project-scoped routes need the X-Project-ID header.",
    },
    servers: [{ url: "/" }],
    security: [{ bearer_auth: [] }, { cookie_auth: [] }],
    tags: [
      "Health",
      "Session",
      "Projects",
      "Agents",
      "Tools",
      "Workflows",
      "Executions",
      "Traces",
      "Events",
      "Event Triggers",
      "Schedules",
      "Workers",
      "Queues",
      "Deployments",
      "Worker protocol",
    ].map((name) => ({ name })),
  });

  app.notFound((c) =>
    errorJson(c, new SpoolError("NOT_FOUND", `no route for ${c.req.method} ${c.req.path}`)),
  );
  app.onError(onError);
  return app;
}
