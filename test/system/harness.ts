// A whole Spool system for tests: the real API on a real port, worker and scheduler as separate
// processes, over the Postgres and Redis of the global setup (or a private Redis a test may stop).
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { serve } from "@hono/node-server";
import { createDatabase } from "@spool/db";
import { Engine, generateApiKey, InClusterSender, PushDispatcher } from "@spool/engine";
import { createClient, type SpoolClient } from "@spool/sdk";
import { createLogger } from "@spool/shared";
import { Redis } from "ioredis";
import pg from "pg";
import { inject } from "vitest";
import { createApp } from "../../apps/api/src/app.js";
import { createEventHub } from "../../apps/api/src/streaming/event-hub.js";
import { databaseOfThisFile } from "../../packages/engine/test/file-database.js";
import { SIDE_EFFECTS_DDL } from "../fixtures/side-effects.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const FIXTURES = fileURLToPath(new URL("../fixtures/workflows.ts", import.meta.url));

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** A child process whose JSON log lines can be awaited. */
export class Proc {
  readonly lines: Record<string, unknown>[] = [];
  private waiters: {
    test: (l: Record<string, unknown>) => boolean;
    resolve: (l: Record<string, unknown>) => void;
  }[] = [];
  readonly exited: Promise<number | null>;
  stderr = "";

  constructor(
    readonly name: string,
    readonly child: ChildProcess,
  ) {
    let buffer = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      buffer += chunk.toString();
      let nl = buffer.indexOf("\n");
      while (nl >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        nl = buffer.indexOf("\n");
        try {
          const parsed = JSON.parse(line) as Record<string, unknown>;
          this.lines.push(parsed);
          const matched = this.waiters.filter((w) => w.test(parsed));
          this.waiters = this.waiters.filter((w) => !matched.includes(w));
          for (const w of matched) w.resolve(parsed);
        } catch {
          // not a log line
        }
      }
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
    this.exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
  }

  waitFor(
    test: (l: Record<string, unknown>) => boolean,
    timeoutMs = 30_000,
  ): Promise<Record<string, unknown>> {
    const seen = this.lines.find(test);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(`${this.name}: no matching log line in ${timeoutMs} ms\n${this.stderr.slice(-2000)}`),
          ),
        timeoutMs,
      );
      this.waiters.push({
        test,
        resolve: (l) => {
          clearTimeout(timer);
          resolve(l);
        },
      });
    });
  }

  kill(signal: NodeJS.Signals = "SIGTERM") {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    return this.exited;
  }
}

/**
 * A redis-server of the test's own, so the test may stop and restart it (on `port`, or a free one).
 * A free port picked beforehand can be taken before redis-server binds it (an outgoing connection's
 * ephemeral port, another test's redis-server): ours then exits, and another port is tried.
 */
export async function startRedis(
  port?: number,
): Promise<{ url: string; port: number; stop(): Promise<void> }> {
  for (let attempt = 1; ; attempt++) {
    const p = port ?? (await freePort());
    const child = spawn(
      "redis-server",
      ["--port", String(p), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
      { stdio: "ignore" },
    );
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    let gone = false;
    void exited.then(() => (gone = true));
    const url = `redis://127.0.0.1:${p}`;
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on("error", () => {});
    let up = false;
    for (let i = 0; i <= 100 && !gone; i++) {
      try {
        await probe.connect();
        // Ours, not another test's redis-server that holds the port (ours then exits).
        const info = await probe.info("server");
        if (Number(/process_id:(\d+)/.exec(info)?.[1]) !== child.pid) throw new Error("not ours");
        up = true;
        break;
      } catch {
        probe.disconnect();
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    probe.disconnect();
    if (up) {
      return {
        url,
        port: p,
        stop: async () => {
          child.kill("SIGKILL");
          await exited;
        },
      };
    }
    child.kill("SIGKILL");
    if (port !== undefined || attempt >= 5) {
      throw new Error(`redis-server did not start on port ${p}${gone ? " (it exited: port taken?)" : ""}`);
    }
  }
}

export interface SystemOptions {
  redisUrl?: string;
  /**
   * A database of this test file's own: for tests of what a scheduler does to every project (its
   * sweeps), which the other test files' schedulers would otherwise do first on the shared one.
   */
  ownDatabase?: boolean;
  /** A database elsewhere (already migrated), e.g. a Postgres the test crashes and restarts. */
  databaseUrl?: string;
  workflowsModule?: string;
  workerEnv?: Record<string, string>;
  heartbeatIntervalSeconds?: number;
  /** Lock of the API's push dispatcher jobs: a dead dispatcher's pushed runs are adopted after it. */
  pushLockMs?: number;
}

export interface System {
  apiUrl: string;
  projectId: string;
  apiKey: string;
  /** The API's admin key (SPOOL_ADMIN_KEY): belongs to no project, may act on any. */
  adminKey: string;
  engine: Engine;
  /** The in-process API's sender of new runs to in-cluster worker processes. */
  inClusterSender: InClusterSender;
  client: SpoolClient;
  db: pg.Pool;
  redisUrl: string;
  startWorker(env?: Record<string, string>): Promise<Proc & { workerId: string }>;
  startScheduler(env?: Record<string, string>): Promise<Proc>;
  /**
   * A remote worker process (test/remote/worker-main.ts, the SDK's createWorker) that holds only the
   * API URL, a key and the project id: its environment has no database or Redis URL.
   */
  startRemoteWorker(env?: Record<string, string>): Promise<Proc & { workerId: string; pushUrl: string }>;
  /**
   * A second API, as its own process (the test may kill it), on `port` or a free one; it pushes
   * nothing (the in-process API does).
   */
  startApiProcess(port?: number, env?: Record<string, string>): Promise<Proc & { url: string; port: number }>;
  stop(): Promise<void>;
}

/** Variables a remote worker must never see: it reaches Spool through the API alone. */
const INFRASTRUCTURE_ENV = [
  "DATABASE_URL",
  "REDIS_URL",
  "SPOOL_TEST_DATABASE_URL",
  "SPOOL_TEST_REDIS_URL",
  "TEST_DATABASE_URL",
  "TEST_REDIS_URL",
];

export async function startSystem(options: SystemOptions = {}): Promise<System> {
  const databaseUrl =
    options.databaseUrl ?? (options.ownDatabase ? await databaseOfThisFile() : inject("databaseUrl"));
  // The fixtures' side-effect counter reads this in the test process.
  process.env.SPOOL_TEST_DATABASE_URL = databaseUrl;
  const redisUrl = options.redisUrl ?? inject("redisUrl");
  const logger = createLogger("test-api", "silent");
  const { prisma, pool } = createDatabase({ databaseUrl, maxConnections: 10 });
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1, lazyConnect: true });
  redis.on("error", () => {});
  const adminKey = generateApiKey("sk_admin_");
  const engine = new Engine({
    prisma,
    pool,
    redis,
    redisUrl,
    logger,
    adminKey,
    heartbeatIntervalSeconds: options.heartbeatIntervalSeconds ?? 1,
  });
  const eventHub = createEventHub(engine, redisUrl, logger);
  const app = createApp({ engine, eventHub, logger });
  let pushDispatcher: PushDispatcher | undefined;
  // Port 0: the OS picks a free one as the server binds (one picked beforehand could be taken meanwhile).
  let server!: ReturnType<typeof serve>;
  const port = await new Promise<number>((resolve, reject) => {
    server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info) => resolve(info.port));
    server.once("error", reject);
  });
  const apiUrl = `http://127.0.0.1:${port}`;

  const admin = createClient({ baseUrl: apiUrl, apiKey: adminKey, projectId: "" });
  const project = await admin.request<{ id: string }>("POST", "/projects", { name: "system-test" });
  const { key } = await admin.request<{ key: string }>("POST", `/projects/${project.id}/api-keys`, {
    name: "t",
  });
  const client = createClient({ baseUrl: apiUrl, apiKey: key, projectId: project.id });
  // As the API process does: push this project's runs to its remote workers.
  pushDispatcher = new PushDispatcher(engine, {
    logger,
    refreshMs: 200,
    projectIds: [project.id],
    lockDurationMs: options.pushLockMs ?? 5000,
  });
  pushDispatcher.start();
  // As the API process does: new runs go to in-cluster worker processes without jobs.
  const inClusterSender = new InClusterSender(engine, { logger, refreshMs: 200 });
  inClusterSender.start();
  const db = new pg.Pool({ connectionString: databaseUrl, max: 4 });
  // An idle connection dropped by a Postgres the test restarts must not fail the test file.
  db.on("error", () => {});
  await db.query(`BEGIN; ${SIDE_EFFECTS_DDL}; COMMIT;`);

  const procs: Proc[] = [];
  const baseEnv = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    SPOOL_API_URL: apiUrl,
    SPOOL_API_KEY: key,
    SPOOL_PROJECT_ID: project.id,
    SPOOL_LOG_LEVEL: "info",
  };
  const launch = (
    name: string,
    entry: string,
    env: Record<string, string>,
    inherit: NodeJS.ProcessEnv = baseEnv,
  ) => {
    const child = spawn(process.execPath, ["--import", "tsx", entry], {
      cwd: ROOT,
      env: { ...inherit, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const proc = new Proc(name, child);
    procs.push(proc);
    return proc;
  };

  return {
    apiUrl,
    projectId: project.id,
    apiKey: key,
    adminKey,
    engine,
    inClusterSender,
    client,
    db,
    redisUrl,
    async startWorker(env = {}) {
      const proc = launch("worker", "apps/worker/src/main.ts", {
        SPOOL_WORKFLOWS_MODULE: options.workflowsModule ?? FIXTURES,
        SPOOL_JOB_LOCK_MS: "2000",
        SPOOL_DRAIN_TIMEOUT_MS: "2000",
        ...options.workerEnv,
        ...env,
      });
      const registered = await proc.waitFor((l) => l.msg === "registered", 60_000);
      await proc.waitFor((l) => l.msg === "consuming", 60_000);
      return Object.assign(proc, { workerId: String(registered.worker_id) });
    },
    async startScheduler(env = {}) {
      const proc = launch("scheduler", "apps/scheduler/src/main.ts", {
        SPOOL_SWEEP_INTERVAL_MS: "300",
        SPOOL_QUEUED_GRACE_MS: "1000",
        ...env,
      });
      await proc.waitFor((l) => l.msg === "scheduler started", 60_000);
      return proc;
    },
    async startRemoteWorker(env = {}) {
      const apiOnly = Object.fromEntries(
        Object.entries(process.env).filter(([k]) => !INFRASTRUCTURE_ENV.includes(k)),
      );
      const proc = launch(
        "remote-worker",
        "test/remote/worker-main.ts",
        {
          SPOOL_API_URL: apiUrl,
          SPOOL_API_KEY: key,
          SPOOL_PROJECT_ID: project.id,
          SPOOL_LOG_LEVEL: "info",
          ...env,
        },
        apiOnly,
      );
      const ready = await proc.waitFor((l) => l.msg === "remote worker ready", 60_000);
      return Object.assign(proc, { workerId: String(ready.worker_id), pushUrl: String(ready.push_url) });
    },
    async startApiProcess(port, env = {}) {
      const proc = launch("api", "apps/api/src/main.ts", {
        // 0: the port the OS picks as the API binds, which its log line names.
        PORT: String(port ?? 0),
        HOST: "127.0.0.1",
        SPOOL_HEARTBEAT_INTERVAL_SECONDS: String(options.heartbeatIntervalSeconds ?? 1),
        SPOOL_PUSH_DISPATCH: "false",
        ...env,
      });
      const listening = await proc.waitFor((l) => l.msg === "api listening", 60_000);
      const p = Number(listening.port);
      return Object.assign(proc, { url: `http://127.0.0.1:${p}`, port: p });
    },
    async stop() {
      await Promise.all(procs.map((p) => p.kill("SIGKILL")));
      await Promise.all([pushDispatcher?.stop(), inClusterSender.stop()]);
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await eventHub.close();
      await engine.close();
      await prisma.$disconnect();
      await pool.end();
      redis.disconnect();
      await db.end();
    },
  };
}

/** Polls until `check` returns a value that is not undefined. */
export async function eventually<T>(
  check: () => Promise<T | undefined>,
  timeoutMs = 30_000,
  what = "condition",
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
