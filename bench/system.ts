// Starts the real Spool system for the benchmark: Postgres + Redis (scripts/services.mjs in a child
// process, unless DATABASE_URL / REDIS_URL are given), migrations, then the api, worker(s) and scheduler
// as separate `node --import tsx apps/<x>/src/main.ts` processes, exactly as scripts/dev.mjs does.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { deployMigrations } from "../packages/db/scripts/migrate.mjs";
import { type ServicesHandle, startServicesProcess } from "../scripts/services-client.mjs";

export const ROOT = fileURLToPath(new URL("../", import.meta.url));
const WORKFLOWS = fileURLToPath(new URL("./workflows.ts", import.meta.url));
const READY_TIMEOUT_MS = 90_000;
const STOP_TIMEOUT_MS = 10_000;

let logTag = "bench";
const log = (m: string) => process.stderr.write(`[${logTag}] ${m}\n`);

/** The prefix of this module's own log lines (`[bench]` unless another runner says otherwise). */
export function setLogTag(tag: string): void {
  logTag = tag;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** A child app whose JSON log lines can be awaited; keeps only a tail of its output. */
export class App {
  private waiters: {
    test: (l: Record<string, unknown>) => boolean;
    resolve: (l: Record<string, unknown>) => void;
  }[] = [];
  private seen: Record<string, unknown>[] = [];
  tail = "";
  readonly exited: Promise<void>;

  constructor(
    readonly name: string,
    readonly child: ChildProcess,
  ) {
    let buffer = "";
    const keep = (s: string) => {
      this.tail = (this.tail + s).slice(-8000);
    };
    child.stdout?.on("data", (chunk: Buffer) => {
      const s = chunk.toString();
      keep(s);
      buffer += s;
      for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        if (!line.startsWith("{")) continue;
        try {
          const parsed = JSON.parse(line) as Record<string, unknown>;
          if (this.seen.length < 50) this.seen.push(parsed);
          const hit = this.waiters.filter((w) => w.test(parsed));
          this.waiters = this.waiters.filter((w) => !hit.includes(w));
          for (const w of hit) w.resolve(parsed);
        } catch {
          // not a log line
        }
      }
    });
    child.stderr?.on("data", (chunk: Buffer) => keep(chunk.toString()));
    this.exited = new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      else child.once("exit", () => resolve());
    });
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The first log line with this `msg`; rejects if the process exits or time runs out. */
  waitForMsg(msg: string, timeoutMs = READY_TIMEOUT_MS): Promise<Record<string, unknown>> {
    const seen = this.seen.find((l) => l.msg === msg);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${this.name}: no "${msg}" within ${timeoutMs} ms\n${this.tail}`)),
        timeoutMs,
      );
      this.exited.then(() => {
        clearTimeout(timer);
        reject(new Error(`${this.name} exited (code ${this.child.exitCode}) before "${msg}"\n${this.tail}`));
      });
      this.waiters.push({
        test: (l) => l.msg === msg,
        resolve: (line) => {
          clearTimeout(timer);
          resolve(line);
        },
      });
    });
  }

  async stop(): Promise<void> {
    if (!this.alive) return;
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => {
      if (this.alive) this.child.kill("SIGKILL");
    }, STOP_TIMEOUT_MS);
    await this.exited;
    clearTimeout(timer);
  }
}

export interface SystemOptions {
  /** API processes; clients spread their requests over them (the first one creates the project). */
  apis: number;
  workers: number;
  workerConcurrency: number;
  /** Embedded Postgres fsyncs every commit (fsync=on, synchronous_commit=on), as production does. */
  durable: boolean;
}

export interface BenchSystem {
  databaseUrl: string;
  redisUrl: string;
  servicesStarted: boolean;
  /** The scripts/services.mjs process (parent of postgres and redis-server), when we started it. */
  servicesPid: number | null;
  apiUrl: string;
  /** Every API's base URL (apiUrl first). */
  apiUrls: string[];
  projectId: string;
  apiKey: string;
  deploymentId: string;
  api: App;
  /** Every API process (api first). */
  apis: App[];
  workers: App[];
  /** A remote push worker (createWorker) serving bench-3-steps-remote. */
  remote: App;
  scheduler: App;
}

/** Everything this process started, so that a failure or Ctrl-C can stop it all. */
const started: { apps: App[]; services: Set<ServicesHandle> } = { apps: [], services: new Set() };
// Last resort: this process dies without stopAll() (an uncaught error, say a write to a closed pipe
// as in `npm run bench | head`). The services stop when their stdin closes; the apps would not, and
// an orphaned system would go on loading the machine.
process.on("exit", () => {
  for (const app of started.apps) app.child.kill("SIGKILL");
});

/**
 * Starts `node --import tsx <entry>` (an app of this repository) with `env` over this process's
 * environment, as scripts/dev.mjs does; stopAll() stops it. With `logFile`, its stdout and stderr
 * are also appended there.
 */
export function launch(
  name: string,
  entry: string,
  env: NodeJS.ProcessEnv,
  o: { logFile?: string } = {},
): App {
  // BENCH_CPU_PROF=<dir>: write a V8 CPU profile of each app there when it exits (for diagnosis).
  const prof = process.env.BENCH_CPU_PROF ? ["--cpu-prof", "--cpu-prof-dir", process.env.BENCH_CPU_PROF] : [];
  const child = spawn(process.execPath, [...prof, "--import", "tsx", entry], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  if (o.logFile) {
    const file = createWriteStream(o.logFile, { flags: "a" });
    child.stdout?.on("data", (chunk: Buffer) => file.write(chunk));
    child.stderr?.on("data", (chunk: Buffer) => file.write(chunk));
    child.once("close", () => file.end());
  }
  const app = new App(name, child);
  started.apps.push(app);
  // A stopped or killed app is forgotten: a runner that restarts apps does not pile them up.
  void app.exited.then(() => {
    const i = started.apps.indexOf(app);
    if (i >= 0) started.apps.splice(i, 1);
  });
  return app;
}

/** Lets stopAll() stop a services process (scripts/services.mjs) this process started itself. */
export function trackServices(services: ServicesHandle): void {
  started.services.add(services);
  void services.exited.then(() => started.services.delete(services));
}

let exiting = false;

/** Stops every app and service this process started, then exits with `code`; once only. */
export async function stopAllAndExit(code: number): Promise<void> {
  if (exiting) return;
  exiting = true;
  await stopAll().catch(() => {});
  process.exit(code);
}

/** Ctrl-C (or SIGTERM, SIGHUP) stops every app and service this process started, then exits 130. */
export function stopAllOnSignals(): void {
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.on(sig, () => {
      if (exiting) return;
      log(`${sig}: stopping everything`);
      void stopAllAndExit(130);
    });
  }
}

export async function stopAll(): Promise<void> {
  const apps = started.apps.splice(0);
  await Promise.allSettled(apps.map((a) => a.stop()));
  const services = [...started.services];
  started.services.clear();
  if (services.length) {
    log("stopping postgres and redis");
    await Promise.allSettled(services.map((s) => s.stop()));
  }
}

async function api<T>(
  apiUrl: string,
  method: string,
  path: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<T> {
  const res = await fetch(`${apiUrl}/api/v1${path}`, {
    method,
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}

/** Creates a project and an API key for it through the API, with the admin key. */
export async function createProject(
  apiUrl: string,
  adminKey: string,
  name: string,
): Promise<{ projectId: string; apiKey: string }> {
  const admin = { authorization: `Bearer ${adminKey}` };
  const project = await api<{ id: string }>(apiUrl, "POST", "/projects", { name }, admin);
  const { key } = await api<{ key: string }>(
    apiUrl,
    "POST",
    `/projects/${project.id}/api-keys`,
    { name },
    admin,
  );
  return { projectId: project.id, apiKey: key };
}

/**
 * Postgres and Redis for a bench: DATABASE_URL / REDIS_URL when both are given, else started here
 * (scripts/services.mjs, temporary data, stopped by stopAll); migrated either way.
 */
export async function benchServices(o: { durable: boolean }) {
  let databaseUrl = process.env.DATABASE_URL || "";
  let redisUrl = process.env.REDIS_URL || "";
  const servicesStarted = !databaseUrl || !redisUrl;
  let servicesPid: number | null = null;
  if (servicesStarted) {
    log(
      `starting postgres (${o.durable ? "durable: fsync on" : "fsync off"}) and redis (scripts/services.mjs, temporary data)`,
    );
    const services = await startServicesProcess({
      durable: o.durable,
      env: { DATABASE_URL: databaseUrl || undefined, REDIS_URL: redisUrl || undefined },
    });
    trackServices(services);
    servicesPid = services.child.pid ?? null;
    databaseUrl = services.databaseUrl;
    redisUrl = services.redisUrl;
  }
  await deployMigrations(databaseUrl);
  return { databaseUrl, redisUrl, servicesStarted, servicesPid };
}

export async function startSystem(o: SystemOptions): Promise<BenchSystem> {
  const { databaseUrl, redisUrl, servicesStarted, servicesPid } = await benchServices(o);

  const adminKey = `sk_admin_bench_${randomBytes(24).toString("hex")}`;
  const baseEnv: NodeJS.ProcessEnv = {
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    SPOOL_LOG_LEVEL: "info",
  };
  // Each API takes a port the OS picks as it binds (PORT=0) and says which: a port picked before
  // the process starts could be taken meanwhile (an outgoing connection's ephemeral port, say).
  const startApi = async (name: string) => {
    const app = launch(name, "apps/api/src/main.ts", {
      ...baseEnv,
      PORT: "0",
      HOST: "127.0.0.1",
      SPOOL_ADMIN_KEY: adminKey,
      // The bench measures the engine, not the per-key limit (1,000 requests/s by default, which a
      // fast host's closed loop reaches: it then answers 429s). The limiter still counts each request.
      SPOOL_RATE_LIMIT_PER_SECOND: "1000000",
    });
    const { port } = await app.waitForMsg("api listening");
    return { app, url: `http://127.0.0.1:${Number(port)}` };
  };
  log("starting the api");
  const { app: apiApp, url: apiUrl } = await startApi("api");
  log(`api on ${apiUrl}`);
  const more = await Promise.all(Array.from({ length: o.apis - 1 }, (_, i) => startApi(`api-${i + 2}`)));

  const { projectId, apiKey: key } = await createProject(apiUrl, adminKey, "bench");

  const deploymentId = "bench";
  const appEnv = {
    ...baseEnv,
    SPOOL_API_URL: apiUrl,
    SPOOL_API_KEY: key,
    SPOOL_PROJECT_ID: projectId,
  };
  log(`starting ${o.workers} worker(s) (concurrency ${o.workerConcurrency}) and the scheduler`);
  const workers = Array.from({ length: o.workers }, (_, i) =>
    launch(`worker-${i + 1}`, "apps/worker/src/main.ts", {
      ...appEnv,
      SPOOL_WORKFLOWS_MODULE: WORKFLOWS,
      SPOOL_DEPLOYMENT_ID: deploymentId,
      SPOOL_WORKER_CONCURRENCY: String(o.workerConcurrency),
    }),
  );
  const scheduler = launch("scheduler", "apps/scheduler/src/main.ts", appEnv);
  // The remote worker reaches Spool through the API only.
  const remote = launch("remote-worker", "bench/remote-worker.ts", {
    ...appEnv,
    DATABASE_URL: undefined,
    REDIS_URL: undefined,
    SPOOL_WORKER_CONCURRENCY: String(o.workerConcurrency),
  });
  await Promise.all([
    ...workers.map((w) => w.waitForMsg("consuming")),
    scheduler.waitForMsg("scheduler started"),
    remote.waitForMsg("registered"),
  ]);
  return {
    databaseUrl,
    redisUrl,
    servicesStarted,
    servicesPid,
    apiUrl,
    projectId,
    apiKey: key,
    deploymentId,
    api: apiApp,
    apis: [apiApp, ...more.map((m) => m.app)],
    apiUrls: [apiUrl, ...more.map((m) => m.url)],
    workers,
    remote,
    scheduler,
  };
}
