// Test harness: the real app over real Postgres and Redis (started by the global setup).
import { createDatabase } from "@spool/db";
import { Engine, generateApiKey } from "@spool/engine";
import { createLogger, type Logger } from "@spool/shared";
import { Redis } from "ioredis";
import { afterAll, inject } from "vitest";
import { createApp, type LimitOptions } from "../src/app.js";
import type { App } from "../src/context.js";
import { createEventHub } from "../src/streaming/event-hub.js";

export interface TestApi {
  adminKey: string;
  engine: Engine;
  /** The app itself, e.g. to serve it as main.ts does (src/server.ts). */
  app: App;
  /** The app's fetch handler, to serve it on a real port. */
  fetch: (request: Request) => Response | Promise<Response>;
  /** Sends a request through the real app (routing, middleware, validation, error handling). */
  request(
    path: string,
    init?: RequestInit & { key?: string; projectId?: string; json?: unknown },
  ): Promise<Response>;
  /** A fresh project and an API key for it. */
  createProject(name?: string): Promise<{ projectId: string; key: string }>;
}

export interface TestApiOptions {
  /** Postgres to use instead of the test database (e.g. a closed port, to test an outage). */
  databaseUrl?: string;
  redisUrl?: string;
  /** The app's and engine's logger (default: silent). */
  logger?: Logger;
  maxBodyBytes?: number;
  sseKeepaliveMs?: number;
  limits?: Partial<LimitOptions>;
}

export function createTestApi(options: TestApiOptions = {}): TestApi {
  const { prisma, pool } = createDatabase({
    databaseUrl: options.databaseUrl ?? inject("databaseUrl"),
    maxConnections: 5,
  });
  const redis = new Redis(options.redisUrl ?? inject("redisUrl"), {
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    lazyConnect: true,
  });
  redis.on("error", () => {});
  const adminKey = generateApiKey("sk_admin_");
  const logger = options.logger ?? createLogger("api-test", "silent");
  const redisUrl = options.redisUrl ?? inject("redisUrl");
  const engine = new Engine({ prisma, pool, redis, redisUrl, logger, adminKey, heartbeatIntervalSeconds: 5 });
  const eventHub = createEventHub(engine, redisUrl, logger);
  const app = createApp({
    engine,
    eventHub,
    logger,
    maxBodyBytes: options.maxBodyBytes,
    sseKeepaliveMs: options.sseKeepaliveMs,
    // Unlimited rate unless a test sets one: sweeps of every route send bursts from one key.
    limits: { ratePerSecond: 0, ...options.limits },
  });
  afterAll(async () => {
    await eventHub.close();
    await engine.close();
    await prisma.$disconnect();
    await pool.end();
    redis.disconnect();
  });

  const request: TestApi["request"] = (path, init = {}) => {
    const { key, projectId, json, ...rest } = init;
    const headers = new Headers(rest.headers);
    if (key) headers.set("authorization", `Bearer ${key}`);
    if (projectId) headers.set("x-project-id", projectId);
    if (json !== undefined) headers.set("content-type", "application/json");
    return Promise.resolve(
      app.request(path, { ...rest, headers, ...(json !== undefined ? { body: JSON.stringify(json) } : {}) }),
    );
  };

  return {
    adminKey,
    engine,
    app,
    fetch: (req) => app.fetch(req),
    request,
    async createProject(name = "test") {
      const project = await request("/api/v1/projects", { method: "POST", key: adminKey, json: { name } });
      const { id } = (await project.json()) as { id: string };
      const created = await request(`/api/v1/projects/${id}/api-keys`, {
        method: "POST",
        key: adminKey,
        json: { name: "k" },
      });
      const { key } = (await created.json()) as { key: string };
      return { projectId: id, key };
    },
  };
}

/** Asserts the contract's error body and returns it. */
export async function expectError(res: Response, status: number, errorType: string) {
  const body = (await res.json()) as { error: string; error_type: string; details?: unknown };
  if (res.status !== status || body.error_type !== errorType) {
    throw new Error(`expected ${status} ${errorType}, got ${res.status} ${JSON.stringify(body)}`);
  }
  if (typeof body.error !== "string" || body.error.length === 0) throw new Error("error message missing");
  return body;
}
