// `npm run chaos [-- --runs N] [--clients N] [--small] [--keep]`
//
// Proves, while the system is being broken, that nothing accepted is lost and no stored step runs
// again. Starts durable Postgres and Redis (persistent data in a fresh temp dir), the api, two
// in-cluster workers serving bench/chaos-workflows.ts and the scheduler; drives `--runs` runs from
// `--clients` clients (Idempotency-Key per run, retried through every outage) while a fixed fault
// schedule SIGKILLs apps, flushes and restarts Redis and restarts Postgres; then waits (bounded) for
// every accepted run to finish, checks Postgres and prints a report. Exits 0 only when no run is
// lost, failed or duplicated, no stored step ran again, no process died on its own and a fresh run
// completes at the end. See docs/benchmarks.md ("Chaos").
import { randomBytes } from "node:crypto";
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import pg from "pg";
import { deployMigrations } from "../packages/db/scripts/migrate.mjs";
import { crashPostgres, type ServicesHandle, startServicesProcess } from "../scripts/services-client.mjs";
import { CHAOS_EFFECTS_DDL, CHAOS_WORKFLOW_ID } from "./chaos-workflows.js";
import { summarize } from "./stats.js";
import { type App, createProject, freePort, launch, setLogTag, stopAll, trackServices } from "./system.js";

const { values: args } = parseArgs({
  options: {
    runs: { type: "string" },
    clients: { type: "string" },
    small: { type: "boolean", default: false },
    keep: { type: "boolean", default: false },
  },
  strict: true,
});

const SMALL = args.small;
const RUNS = Number(args.runs ?? (SMALL ? 100 : 1000));
const CLIENTS = Number(args.clients ?? (SMALL ? 5 : 10));
if (!Number.isInteger(RUNS) || RUNS < 1 || RUNS > 100_000) throw new Error("--runs must be 1..100000");
if (!Number.isInteger(CLIENTS) || CLIENTS < 1 || CLIENTS > 200) throw new Error("--clients must be 1..200");

const WORKERS = 2;
const WORKER_CONCURRENCY = 10;
/** The runs are paced evenly over this window (run i is sent at i/RUNS of it), the faults within it. */
const LOAD_MS = SMALL ? 30_000 : 100_000;
/** After the load and the last fault, every accepted run must finish within this. */
const DRAIN_TIMEOUT_MS = 300_000;
/** A client gives up on a run that was not accepted within this (it is then reported). */
const ACCEPT_DEADLINE_MS = 120_000;
const REQUEST_TIMEOUT_MS = 10_000;
const WORKFLOWS = fileURLToPath(new URL("./chaos-workflows.ts", import.meta.url));
/** The steps whose functions record an effect (`nap` is the durable sleep). */
const STEP_KEYS = ["one", "two", "three"];

setLogTag("chaos");
const log = (m: string) => process.stderr.write(`[chaos] ${m}\n`);
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

// ---------------------------------------------------------------------------------------------------
// The fault schedule: fixed, so every run of the same mode breaks the system the same way.

type FaultKind =
  | "kill-worker"
  | "kill-workers"
  | "kill-scheduler"
  | "kill-api"
  | "redis-flushall"
  | "redis-restart"
  | "redis-crash"
  | "redis-restart-wiped"
  | "postgres-restart"
  | "postgres-crash";

interface Fault {
  atMs: number;
  kind: FaultKind;
  /** kill-worker: which worker (1-based). */
  worker?: number;
}

const DESCRIPTIONS: Record<FaultKind, string> = {
  "kill-worker":
    "SIGKILL one worker while it is inside a step (waits up to 3 s for one), start it again 1 s later",
  "kill-workers":
    "SIGKILL both workers at once while one is inside a step (waits up to 3 s), start them again 1 s later",
  "kill-scheduler": "SIGKILL the scheduler, start it again 1 s later",
  "kill-api":
    "SIGKILL the api while a client request is in flight (waits up to 3 s), start it again on the same port 2 s later",
  "redis-flushall": "FLUSHALL: every job, delayed timer, lock and queue limit gone; Redis stays up",
  "redis-restart": "stop Redis (SIGTERM), start it again 2 s later on the same port: data KEPT (AOF)",
  "redis-crash":
    "SIGKILL redis-server, start it again 2 s later from its AOF (fsync every second: the last ~1 s of writes may be gone)",
  "redis-restart-wiped": "stop Redis, delete its data, start it again 2 s later: data GONE",
  "postgres-restart": "stop Postgres (fast shutdown), start it again 3 s later on the same data dir and port",
  "postgres-crash":
    "Postgres immediate shutdown (SIGQUIT: no checkpoint), start it again 3 s later: WAL crash recovery",
};

// Faults run one after the other: one that is due while the previous is still being repaired waits.
// A SIGKILLed worker's jobs come back when BullMQ notices their lock expired (SPOOL_JOB_LOCK_MS, 30 s;
// its stalled check runs that often and takes two rounds: 30–70 s in all), so the small schedule kills
// workers once and early. A killed worker's job that Redis then loses is only released by the
// scheduler's stranded-run sweep, 120 s after the run last moved: the full schedule does that too.
const SMALL_SCHEDULE: Fault[] = [
  { atMs: 3_000, kind: "redis-flushall" },
  { atMs: 6_000, kind: "kill-workers" },
  { atMs: 12_000, kind: "kill-api" },
  { atMs: 17_000, kind: "redis-restart" },
  { atMs: 21_000, kind: "postgres-restart" },
  { atMs: 26_000, kind: "kill-scheduler" },
];

const FULL_SCHEDULE: Fault[] = [
  { atMs: 6_000, kind: "kill-worker", worker: 1 },
  { atMs: 14_000, kind: "kill-scheduler" },
  { atMs: 22_000, kind: "kill-api" },
  { atMs: 30_000, kind: "redis-flushall" },
  { atMs: 38_000, kind: "postgres-restart" },
  { atMs: 46_000, kind: "kill-workers" },
  { atMs: 54_000, kind: "redis-restart" },
  { atMs: 62_000, kind: "kill-api" },
  { atMs: 70_000, kind: "postgres-crash" },
  { atMs: 78_000, kind: "redis-crash" },
  { atMs: 86_000, kind: "kill-worker", worker: 2 },
  { atMs: 94_000, kind: "redis-restart-wiped" },
];

const SCHEDULE = SMALL ? SMALL_SCHEDULE : FULL_SCHEDULE;

const faultName = (f: Fault) => (f.kind === "kill-worker" ? `kill-worker ${f.worker}` : f.kind);

// ---------------------------------------------------------------------------------------------------
// Processes

interface Ports {
  pg: number;
  redis: number;
  api: number;
}

class Chaos {
  readonly logs: string;
  databaseUrl = "";
  redisUrl = "";
  apiUrl = "";
  private pgServices?: ServicesHandle;
  private redisServices?: ServicesHandle;
  private readonly adminKey = `sk_admin_chaos_${randomBytes(24).toString("hex")}`;
  projectId = "";
  apiKey = "";
  api?: App;
  workers: (App | undefined)[] = [];
  scheduler?: App;
  /** Apps up and not being stopped by us: if one of them exits, it died on its own. */
  private readonly live = new Set<App>();
  readonly diedOnTheirOwn: { name: string; atMs: number; how: string; tail: string }[] = [];
  /** Restarts that did not come up at the first try, and the like. */
  readonly problems: string[] = [];
  stopping = false;

  constructor(
    readonly dataDir: string,
    readonly ports: Ports,
    readonly t0: () => number,
  ) {
    this.logs = join(dataDir, "logs");
    mkdirSync(this.logs, { recursive: true });
  }

  private logFile(name: string) {
    return join(this.logs, `${name}.log`);
  }

  private mark(name: string, what: string) {
    appendFileSync(this.logFile(name), `--- [chaos] ${new Date().toISOString()} ${what} ---\n`);
  }

  async startPostgres(): Promise<void> {
    this.mark("postgres", "starting");
    const file = this.logFile("postgres");
    const h = await startServicesProcess({
      dataDir: this.dataDir,
      persistent: true, // durable (fsync on) and kept across restarts
      pgPort: this.ports.pg,
      // Only Postgres here (a set REDIS_URL is passed through): Redis is restarted on its own.
      env: { REDIS_URL: "redis://127.0.0.1:1" },
      detached: true,
      onStderr: (chunk) => appendFileSync(file, chunk),
    });
    trackServices(h);
    this.pgServices = h;
    if (this.databaseUrl && h.databaseUrl !== this.databaseUrl) {
      throw new Error(`postgres came back on another address (${h.databaseUrl}): its port was taken`);
    }
    this.databaseUrl = h.databaseUrl;
  }

  async startRedis(): Promise<void> {
    this.mark("redis", "starting");
    const file = this.logFile("redis");
    const h = await startServicesProcess({
      dataDir: this.dataDir,
      persistent: true, // appendonly yes, appendfsync everysec
      redisPort: this.ports.redis,
      env: { DATABASE_URL: "postgres://unused@127.0.0.1:1/unused" },
      detached: true,
      onStderr: (chunk) => appendFileSync(file, chunk),
    });
    trackServices(h);
    this.redisServices = h;
    if (this.redisUrl && h.redisUrl !== this.redisUrl) {
      throw new Error(`redis came back on another address (${h.redisUrl}): its port was taken`);
    }
    this.redisUrl = h.redisUrl;
  }

  private watch(app: App) {
    void app.exited.then(() => {
      if (!this.live.delete(app) || this.stopping) return;
      const how = app.child.signalCode ? `signal ${app.child.signalCode}` : `code ${app.child.exitCode}`;
      const atMs = this.t0();
      this.diedOnTheirOwn.push({ name: app.name, atMs, how, tail: app.tail.slice(-3000) });
      log(`!! ${app.name} exited on its own (${how}) at ${secs(atMs)}; it is not restarted`);
    });
  }

  private env(): NodeJS.ProcessEnv {
    return { DATABASE_URL: this.databaseUrl, REDIS_URL: this.redisUrl, SPOOL_LOG_LEVEL: "info" };
  }

  private appEnv(): NodeJS.ProcessEnv {
    return {
      ...this.env(),
      SPOOL_API_URL: this.apiUrl,
      SPOOL_API_KEY: this.apiKey,
      SPOOL_PROJECT_ID: this.projectId,
    };
  }

  /** Launches an app and waits for its ready line; a start that fails is retried (and noted). */
  private async startApp(name: string, entry: string, env: NodeJS.ProcessEnv, ready: string): Promise<App> {
    for (let attempt = 1; ; attempt++) {
      // Nothing new once everything is being stopped (stopAll would not see it).
      if (this.stopping) throw new Error(`not starting ${name}: stopping`);
      this.mark(name, attempt === 1 ? "starting" : `starting (attempt ${attempt})`);
      const app = launch(name, entry, env, { logFile: this.logFile(name) });
      try {
        await app.waitForMsg(ready, 60_000);
        this.live.add(app);
        this.watch(app);
        return app;
      } catch (err) {
        const first = String(err instanceof Error ? err.message : err).split("\n")[0];
        this.problems.push(`${name} did not start at ${secs(this.t0())} (attempt ${attempt}): ${first}`);
        log(`!! ${name} did not start (attempt ${attempt}): ${first}`);
        await app.stop();
        if (attempt >= 5 || this.stopping) throw err;
        await sleep(2_000);
      }
    }
  }

  async startApi(): Promise<void> {
    this.apiUrl = `http://127.0.0.1:${this.ports.api}`;
    this.api = await this.startApp(
      "api",
      "apps/api/src/main.ts",
      { ...this.env(), PORT: String(this.ports.api), HOST: "127.0.0.1", SPOOL_ADMIN_KEY: this.adminKey },
      "api listening",
    );
  }

  async createProject(): Promise<void> {
    ({ projectId: this.projectId, apiKey: this.apiKey } = await createProject(
      this.apiUrl,
      this.adminKey,
      "chaos",
    ));
  }

  async startWorker(i: number): Promise<void> {
    this.workers[i - 1] = await this.startApp(
      `worker-${i}`,
      "apps/worker/src/main.ts",
      {
        ...this.appEnv(),
        SPOOL_WORKFLOWS_MODULE: WORKFLOWS,
        SPOOL_DEPLOYMENT_ID: "chaos",
        SPOOL_WORKER_CONCURRENCY: String(WORKER_CONCURRENCY),
      },
      "consuming",
    );
  }

  async startScheduler(): Promise<void> {
    this.scheduler = await this.startApp(
      "scheduler",
      "apps/scheduler/src/main.ts",
      this.appEnv(),
      "scheduler started",
    );
  }

  /**
   * Waits (up to 3 s) until one of these workers is inside step `two` (its effect was recorded under
   * the worker's pid less than 40 ms ago and its result is not stored; the step sleeps 50–200 ms
   * after recording), so the kill lands mid-step. Returns that run, or null.
   */
  async midStep(db: pg.Pool, workers: (App | undefined)[]): Promise<string | null> {
    const pids = workers.flatMap((w) => (w ? [w.pid] : []));
    const until = performance.now() + 3_000;
    while (performance.now() < until) {
      const { rows } = await db
        .query<{ id: string }>(
          `SELECT f.execution_id::text AS id FROM chaos_effects f
           WHERE f.pid = ANY($1::int[]) AND f.step_key = 'two' AND f.at > clock_timestamp() - interval '40 ms'
             AND NOT EXISTS (SELECT 1 FROM step_results s WHERE s.execution_id = f.execution_id AND s.step_key = 'two')
           LIMIT 1`,
          [pids],
        )
        .catch(() => ({ rows: [] }));
      if (rows[0]) return rows[0].id;
      await sleep(15);
    }
    return null;
  }

  /** SIGKILL, as a crash: no drain, no deregistration. */
  async kill(app: App | undefined): Promise<void> {
    if (!app) return;
    this.live.delete(app);
    this.mark(app.name, "SIGKILL");
    app.child.kill("SIGKILL");
    await app.exited;
  }

  private async redis<T>(fn: (r: Redis) => Promise<T>): Promise<T> {
    const r = new Redis(this.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 5_000 });
    r.on("error", () => {});
    try {
      await r.connect();
      return await fn(r);
    } finally {
      r.disconnect();
    }
  }

  /** Applies one fault and waits until what it broke is running again; returns a note. */
  async apply(f: Fault, db: pg.Pool, clientsInFlight: () => number): Promise<string> {
    switch (f.kind) {
      case "kill-worker": {
        const i = f.worker ?? 1;
        const run = await this.midStep(db, [this.workers[i - 1]]);
        await this.kill(this.workers[i - 1]);
        await sleep(1_000);
        await this.startWorker(i);
        return `worker-${i} killed ${run ? `inside step two of ${run}` : "(no step in flight within 3 s)"}, started again`;
      }
      case "kill-workers": {
        const run = await this.midStep(db, this.workers);
        await Promise.all(this.workers.map((w) => this.kill(w)));
        await sleep(1_000);
        await Promise.all(this.workers.map((_, i) => this.startWorker(i + 1)));
        return `${this.workers.length} workers killed ${run ? `inside step two of ${run}` : "(no step in flight within 3 s)"}, started again`;
      }
      case "kill-scheduler":
        await this.kill(this.scheduler);
        await sleep(1_000);
        await this.startScheduler();
        return "scheduler killed and started again";
      case "kill-api": {
        const until = performance.now() + 3_000;
        while (clientsInFlight() === 0 && performance.now() < until) await sleep(5);
        const inFlight = clientsInFlight();
        await this.kill(this.api);
        await sleep(2_000);
        await this.startApi();
        return `api killed with ${inFlight} client requests in flight, started again on port ${this.ports.api}`;
      }
      case "redis-flushall": {
        const keys = await this.redis(async (r) => {
          const n = await r.dbsize();
          await r.flushall();
          return n;
        });
        return `${keys} keys flushed`;
      }
      case "redis-restart":
      case "redis-restart-wiped":
      case "redis-crash": {
        const old = this.redisServices;
        const keys = await this.redis((r) => r.dbsize()).catch(() => null);
        if (f.kind === "redis-crash") {
          const info = await this.redis((r) => r.info("server"));
          const pid = Number(/process_id:(\d+)/.exec(info)?.[1]);
          if (!pid) throw new Error("cannot tell redis-server's pid");
          this.mark("redis", `SIGKILL redis-server ${pid}`);
          process.kill(pid, "SIGKILL");
          // services.mjs notices and exits on its own.
          await old?.exited;
        } else {
          this.mark("redis", "stopping");
          await old?.stop();
        }
        if (f.kind === "redis-restart-wiped")
          rmSync(join(this.dataDir, "redis"), { recursive: true, force: true });
        await sleep(2_000);
        await this.startRedis();
        const after = await this.redis((r) => r.dbsize()).catch(() => null);
        return `redis back on the same port; keys before ${keys ?? "?"}, after ${after ?? "?"}`;
      }
      case "postgres-restart":
      case "postgres-crash": {
        const old = this.pgServices;
        if (f.kind === "postgres-crash") {
          const pid = crashPostgres(this.dataDir);
          this.mark("postgres", `SIGQUIT postmaster ${pid} (immediate shutdown)`);
          await old?.exited;
        } else {
          this.mark("postgres", "stopping");
          await old?.stop();
        }
        await sleep(3_000);
        await this.startPostgres();
        return "postgres back on the same data dir and port";
      }
    }
  }

  /** What the scheduler's sweeps repaired, summed from its log lines ("swept"). */
  sweepTotals(): Record<string, number> {
    const totals: Record<string, number> = {};
    let text = "";
    try {
      text = readFileSync(this.logFile("scheduler"), "utf8");
    } catch {
      return totals;
    }
    for (const line of text.split("\n")) {
      if (!line.startsWith("{") || !line.includes('"swept"')) continue;
      try {
        const entry = JSON.parse(line) as Record<string, unknown>;
        if (entry.msg !== "swept") continue;
        for (const [k, v] of Object.entries(entry)) {
          if (typeof v === "number" && !["level", "time", "pid"].includes(k))
            totals[k] = (totals[k] ?? 0) + v;
        }
      } catch {
        // not a log line
      }
    }
    return totals;
  }

  stop(): Promise<void> {
    this.stopping = true;
    return stopAll();
  }
}

// ---------------------------------------------------------------------------------------------------
// Load: RUNS logical runs from CLIENTS clients, each retried until the API answers 202.

interface RunRecord {
  i: number;
  key: string;
  executionId?: string;
  /** The 202 carried Idempotent-Replayed: an earlier attempt had created it and its answer was lost. */
  replayed: boolean;
  attempts: number;
  sentAtMs?: number;
  acceptedAtMs?: number;
  gaveUp?: string;
}

interface LoadStats {
  retries: Map<string, number>;
  unexpected: Map<string, number>;
  /** Requests sent and not answered yet. */
  inFlight: number;
}

async function drive(sys: Chaos, records: RunRecord[], loadStart: number, stats: LoadStats) {
  const headers = {
    authorization: `Bearer ${sys.apiKey}`,
    "x-project-id": sys.projectId,
    "content-type": "application/json",
  };
  const count = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
  let next = 0;
  const submit = async (r: RunRecord) => {
    const started = performance.now();
    r.sentAtMs = started - loadStart;
    for (let attempt = 1; ; attempt++) {
      r.attempts = attempt;
      let wait = Math.min(2_000, 100 * 2 ** Math.min(attempt, 5));
      stats.inFlight++;
      try {
        const res = await fetch(`${sys.apiUrl}/api/v1/workflows/${CHAOS_WORKFLOW_ID}/run`, {
          method: "POST",
          headers: { ...headers, "idempotency-key": r.key },
          body: JSON.stringify({ input: { run: r.i } }),
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        }).finally(() => stats.inFlight--);
        const text = await res.text();
        if (res.status === 202) {
          const id = (JSON.parse(text) as { execution_id?: string }).execution_id;
          if (id) {
            r.executionId = id;
            r.replayed = res.headers.get("idempotent-replayed") === "true";
            r.acceptedAtMs = performance.now() - loadStart;
            return;
          }
          count(stats.unexpected, "202 without execution_id");
        } else if (res.status >= 500 || res.status === 429 || res.status === 408) {
          count(stats.retries, `HTTP ${res.status}`);
          const after = Number(res.headers.get("retry-after"));
          if (after > 0) wait = Math.min(after * 1000, 5_000);
        } else {
          // A 4xx other than 408/429 will not change on a retry: the run is not accepted.
          count(stats.unexpected, `HTTP ${res.status}`);
          r.gaveUp = `HTTP ${res.status}: ${text.slice(0, 200)}`;
          return;
        }
      } catch (err) {
        const cause = (err as { cause?: { code?: string } }).cause?.code;
        const name = err instanceof Error ? err.name : "error";
        count(stats.retries, cause ?? (name === "TimeoutError" ? "request timeout" : name));
      }
      if (performance.now() - started > ACCEPT_DEADLINE_MS) {
        r.gaveUp = `not accepted within ${ACCEPT_DEADLINE_MS / 1000} s (${attempt} attempts)`;
        return;
      }
      await sleep(wait);
    }
  };
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      for (let i = next++; i < records.length; i = next++) {
        const due = loadStart + (i * LOAD_MS) / records.length;
        const delay = due - performance.now();
        if (delay > 0) await sleep(delay);
        await submit(records[i]!);
      }
    }),
  );
}

// ---------------------------------------------------------------------------------------------------
// Checks, all against Postgres (the source of truth)

interface ExecRow {
  id: string;
  status: string;
  run: number | null;
  result: { run?: number; value?: number } | null;
  error: { message?: string } | null;
  createdAt: Date;
  completedAt: Date | null;
  dispatchSeq: number;
  lease: number;
  steps: number;
}

async function statuses(db: pg.Pool, ids: string[]): Promise<Map<string, number>> {
  const { rows } = await db.query<{ status: string; n: number }>(
    "SELECT status, count(*)::int AS n FROM executions WHERE id = ANY($1::uuid[]) GROUP BY status",
    [ids],
  );
  return new Map(rows.map((r) => [r.status, r.n]));
}

const TERMINAL = ["completed", "failed", "cancelled"];
const finishedOf = (m: Map<string, number>) => TERMINAL.reduce((s, k) => s + (m.get(k) ?? 0), 0);

interface Rerun {
  executionId: string;
  stepKey: string;
  at: string;
  completedAt: string;
  resultStored: boolean;
  pid: number;
}

async function analyse(db: pg.Pool, sys: Chaos, ids: string[]) {
  const { rows: execs } = await db.query<ExecRow>(
    `SELECT e.id::text, e.status, (e.input->>'run')::int AS run, e.result, e.error,
            e.created_at AS "createdAt", e.completed_at AS "completedAt",
            e.dispatch_seq AS "dispatchSeq", e.lease,
            (SELECT count(*)::int FROM step_results s WHERE s.execution_id = e.id) AS steps
     FROM executions e WHERE e.id = ANY($1::uuid[])`,
    [ids],
  );
  const { rows: dupes } = await db.query<{ run: number; ids: string[] }>(
    `SELECT (input->>'run')::int AS run, array_agg(id::text ORDER BY created_at) AS ids
     FROM executions WHERE project_id = $1::uuid AND workflow_id = $2
     GROUP BY 1 HAVING count(*) > 1 ORDER BY 1`,
    [sys.projectId, CHAOS_WORKFLOW_ID],
  );
  const { rows: totals } = await db.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM executions WHERE project_id = $1::uuid AND workflow_id = $2",
    [sys.projectId, CHAOS_WORKFLOW_ID],
  );
  // A step function ran again after its result was stored when
  //  - its effect's INSERT already saw the completed result (its snapshot is taken when the statement,
  //    the function's first action, starts: the result was committed before the function began), or
  //  - its effect's clock_timestamp() is more than 1 ms after the result's completed_at.
  //    completed_at is now() of the storing statement, which precedes its commit, rounded to the
  //    millisecond (so it can read up to 0.5 ms early); the original call's effect was written and
  //    committed before its function returned, i.e. before that statement began, so it is always
  //    earlier than completed_at + 0.5 ms. A call that merely retried before the result was stored
  //    (a crash mid-step, or a failed attempt) is earlier too, and allowed.
  const { rows: reruns } = await db.query<Rerun>(
    `SELECT f.execution_id::text AS "executionId", f.step_key AS "stepKey", f.at::text AS at,
            s.completed_at::text AS "completedAt", f.result_stored AS "resultStored", f.pid
     FROM chaos_effects f
     JOIN step_results s ON s.execution_id = f.execution_id AND s.step_key = f.step_key AND s.status = 'completed'
     WHERE f.result_stored OR f.at > s.completed_at + interval '1 millisecond'
     ORDER BY f.at`,
  );
  const { rows: calls } = await db.query<{ calls: number; steps: number }>(
    `SELECT count(*)::int AS calls, count(DISTINCT (execution_id, step_key))::int AS steps FROM chaos_effects
     WHERE execution_id = ANY($1::uuid[])`,
    [ids],
  );
  const { rows: noEffect } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM step_results s
     WHERE s.execution_id = ANY($1::uuid[]) AND s.step_key = ANY($2) AND s.status = 'completed'
       AND NOT EXISTS (SELECT 1 FROM chaos_effects f WHERE f.execution_id = s.execution_id AND f.step_key = s.step_key)`,
    [ids, STEP_KEYS],
  );
  // The durable 1 s sleep must not end before its wake time (a timer fired early, or from a lost
  // Redis, too soon). Both are millisecond timestamps from the same machine's clock; completed_at is
  // rounded, hence the 1 ms.
  const { rows: early } = await db.query<{ id: string }>(
    `SELECT s.execution_id::text AS id FROM step_results s
     JOIN waits w ON w.execution_id = s.execution_id AND w.step_key = s.step_key
     WHERE s.execution_id = ANY($1::uuid[]) AND s.step_key = 'nap' AND s.status = 'completed'
       AND s.completed_at < w.wake_at - interval '1 millisecond'`,
    [ids],
  );
  return {
    execs,
    early: early.map((r) => r.id),
    dupes,
    total: totals[0]?.n ?? 0,
    reruns,
    calls: calls[0] ?? { calls: 0, steps: 0 },
    noEffect: noEffect[0]?.n ?? 0,
  };
}

// ---------------------------------------------------------------------------------------------------

/** One run with ?wait=30 (input run < 0: not one of the load's): the warm-up and the final canary. */
async function runAndWait(sys: Chaos, run: number): Promise<{ ok: boolean; note: string }> {
  const started = performance.now();
  try {
    const res = await fetch(`${sys.apiUrl}/api/v1/workflows/${CHAOS_WORKFLOW_ID}/run?wait=30`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${sys.apiKey}`,
        "x-project-id": sys.projectId,
        "content-type": "application/json",
      },
      body: JSON.stringify({ input: { run } }),
      signal: AbortSignal.timeout(40_000),
    });
    const body = (await res.json()) as { status?: string; result?: { value?: number } };
    const ms = Math.round(performance.now() - started);
    if (res.status === 200 && body.status === "completed" && body.result?.value === run + 3)
      return { ok: true, note: `completed in ${ms} ms` };
    return { ok: false, note: `HTTP ${res.status}, status ${body.status ?? "?"} after ${ms} ms` };
  } catch (err) {
    return { ok: false, note: String(err) };
  }
}

interface Applied extends Fault {
  appliedAtMs: number;
  tookMs: number;
  note: string;
  error?: string;
}

async function main() {
  const begin = performance.now();
  const dataDir = mkdtempSync(join(tmpdir(), "spool-chaos-"));
  let loadStart = 0;
  const sinceLoad = () => (loadStart ? performance.now() - loadStart : 0);
  const sys = new Chaos(
    dataDir,
    { pg: await freePort(), redis: await freePort(), api: await freePort() },
    sinceLoad,
  );
  let db: pg.Pool | undefined;

  let cleaning: Promise<void> | undefined;
  const cleanup = () => {
    cleaning ??= (async () => {
      await sys.stop().catch(() => {});
      await db?.end().catch(() => {});
      if (args.keep) log(`kept ${dataDir} (logs in ${sys.logs})`);
      else rmSync(dataDir, { recursive: true, force: true });
    })();
    return cleaning;
  };
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.on(sig, () => {
      log(`${sig}: stopping everything`);
      void cleanup().finally(() => process.exit(130));
    });
  }

  try {
    log(`${RUNS} runs from ${CLIENTS} clients over ${secs(LOAD_MS)}; data and logs in ${dataDir}`);
    log("fault schedule (seconds after the load starts):");
    for (const f of SCHEDULE) log(`  ${secs(f.atMs).padStart(7)}  ${faultName(f)}: ${DESCRIPTIONS[f.kind]}`);

    log("starting postgres (durable) and redis (AOF), each in its own scripts/services.mjs");
    await Promise.all([sys.startPostgres(), sys.startRedis()]);
    await deployMigrations(sys.databaseUrl);
    db = new pg.Pool({ connectionString: sys.databaseUrl, max: 3, connectionTimeoutMillis: 5_000 });
    db.on("error", () => {});
    await db.query(CHAOS_EFFECTS_DDL);
    log(`starting the api on port ${sys.ports.api}`);
    await sys.startApi();
    await sys.createProject();
    log(`starting ${WORKERS} workers (concurrency ${WORKER_CONCURRENCY}) and the scheduler`);
    await Promise.all([
      ...Array.from({ length: WORKERS }, (_, i) => sys.startWorker(i + 1)),
      sys.startScheduler(),
    ]);
    // Warm-up: the apps' first runs are slow (lazy imports, JIT, first connections on 2 cores).
    const warm = await Promise.all([-2, -3, -4, -5].map((run) => runAndWait(sys, run)));
    if (!warm.every((w) => w.ok))
      throw new Error(`warm-up runs did not complete: ${warm.map((w) => w.note).join("; ")}`);
    const setupMs = performance.now() - begin;
    log(`system up and warmed up in ${secs(setupMs)}`);

    const tag = `${Date.now().toString(36)}`;
    const records: RunRecord[] = Array.from({ length: RUNS }, (_, i) => ({
      i,
      key: `chaos-${tag}-${i}`,
      replayed: false,
      attempts: 0,
    }));
    const stats: LoadStats = { retries: new Map(), unexpected: new Map(), inFlight: 0 };
    const applied: Applied[] = [];
    loadStart = performance.now();

    const progress = setInterval(() => {
      const accepted = records.filter((r) => r.executionId).length;
      const ids = records.flatMap((r) => (r.executionId ? [r.executionId] : []));
      void statuses(db!, ids)
        .then((m) => `finished ${finishedOf(m)} (failed ${m.get("failed") ?? 0})`)
        .catch(() => "finished ? (postgres unreachable)")
        .then((f) => log(`${secs(sinceLoad())}: accepted ${accepted}/${RUNS}, ${f}`));
    }, 5_000);

    const load = drive(sys, records, loadStart, stats).then(() => performance.now());
    const faults = (async () => {
      for (const f of SCHEDULE) {
        const delay = loadStart + f.atMs - performance.now();
        if (delay > 0) await sleep(delay);
        const at = sinceLoad();
        log(`>> ${secs(at)}: ${faultName(f)}`);
        const t = performance.now();
        try {
          const note = await sys.apply(f, db!, () => stats.inFlight);
          applied.push({ ...f, appliedAtMs: at, tookMs: performance.now() - t, note });
          log(`<< ${faultName(f)}: ${note} (${secs(performance.now() - t)})`);
        } catch (err) {
          const error = String(err instanceof Error ? err.message : err).split("\n")[0] ?? "";
          applied.push({ ...f, appliedAtMs: at, tookMs: performance.now() - t, note: "", error });
          log(`!! ${faultName(f)} failed: ${error}`);
        }
      }
      return performance.now();
    })();
    const [loadEnd, faultsEnd] = await Promise.all([load, faults]);

    const ids = records.flatMap((r) => (r.executionId ? [r.executionId] : []));
    const lastAccepted = Math.max(0, ...records.map((r) => r.acceptedAtMs ?? 0));
    log(
      `load done: ${ids.length}/${RUNS} accepted in ${secs(lastAccepted)}; waiting for every run to finish`,
    );
    const drainStart = performance.now();
    let finished = 0;
    while (performance.now() - drainStart < DRAIN_TIMEOUT_MS) {
      try {
        finished = finishedOf(await statuses(db, ids));
      } catch {
        // Postgres unreachable: try again
      }
      if (finished >= ids.length) break;
      await sleep(1_000);
    }
    const drainMs = performance.now() - drainStart;
    clearInterval(progress);
    const canaryResult = await runAndWait(sys, -1);

    const a = await analyse(db, sys, ids);
    const byStatus = new Map<string, ExecRow[]>();
    for (const e of a.execs) byStatus.set(e.status, [...(byStatus.get(e.status) ?? []), e]);
    const found = new Set(a.execs.map((e) => e.id));
    const missing = ids.filter((id) => !found.has(id));
    const completed = byStatus.get("completed") ?? [];
    const failed = byStatus.get("failed") ?? [];
    const cancelled = byStatus.get("cancelled") ?? [];
    const unfinished = a.execs.filter((e) => !TERMINAL.includes(e.status));
    const lost = unfinished.length + missing.length;
    const wrong = completed.filter((e) => e.result?.value !== (e.run ?? Number.NaN) + 3 || e.steps !== 4);
    const notAccepted = records.filter((r) => !r.executionId);
    const duplicates = a.dupes.reduce((s, d) => s + d.ids.length - 1, 0);
    const rerunExecutions = [...new Set(a.reruns.map((r) => r.executionId))];
    const durations = summarize(
      completed.flatMap((e) => (e.completedAt ? [e.completedAt.getTime() - e.createdAt.getTime()] : [])),
    );
    const endMs = performance.now();

    // ------------------------------------------------------------------------------- the report
    const out: string[] = [];
    const p = (s = "") => out.push(s);
    const examples = (xs: string[]) => (xs.length ? ` e.g. ${xs.slice(0, 10).join(", ")}` : "");
    const list = (m: Map<string, number>) => [...m].map(([k, v]) => `${k} ${v}`).join(", ") || "none";
    p();
    p(`## Chaos: ${SMALL ? "small" : "full"} run`);
    p();
    p(
      `${RUNS} runs of ${CHAOS_WORKFLOW_ID} from ${CLIENTS} clients over ${secs(LOAD_MS)} ` +
        `(${(RUNS / (LOAD_MS / 1000)).toFixed(1)} runs/s offered), ${WORKERS} workers × concurrency ${WORKER_CONCURRENCY}, ` +
        "durable Postgres (fsync on) and Redis with AOF (appendfsync everysec), each in its own services process.",
    );
    p();
    p("Faults (seconds after the load started; `took`: until what it broke was running again):");
    p();
    p("| # | planned | applied | took | fault | what happened |");
    p("|---|---|---|---|---|---|");
    applied.forEach((f, n) => {
      p(
        `| ${n + 1} | ${secs(f.atMs)} | ${secs(f.appliedAtMs)} | ${secs(f.tookMs)} | ${faultName(f)} | ` +
          `${f.error ? `FAILED: ${f.error}` : f.note} |`,
      );
    });
    p();
    p("| | |");
    p("|---|---|");
    p(`| accepted (202 with execution_id) | ${ids.length} / ${RUNS} |`);
    p(`| completed | ${completed.length} |`);
    p(`| failed | ${failed.length}${examples(failed.map((e) => `${e.id} (${e.error?.message ?? "?"})`))} |`);
    if (cancelled.length) p(`| cancelled | ${cancelled.length}${examples(cancelled.map((e) => e.id))} |`);
    p(
      `| **lost** (accepted, not finished after ${secs(drainMs)}) | ${lost}` +
        `${examples([...missing.map((id) => `${id} (missing)`), ...unfinished.map((e) => `${e.id} (${e.status}, dispatch_seq ${e.dispatchSeq}, lease ${e.lease}, ${e.steps} steps stored)`)])} |`,
    );
    p(
      `| duplicates (extra executions for one logical run) | ${duplicates}${examples(a.dupes.map((d) => `run ${d.run}: ${d.ids.join(" + ")}`))} |`,
    );
    p(
      `| **stored steps re-run** | ${a.reruns.length} calls in ${rerunExecutions.length} runs` +
        `${examples(a.reruns.map((r) => `${r.executionId}/${r.stepKey} (effect ${r.at}, stored ${r.completedAt}${r.resultStored ? ", saw the stored result" : ""}, pid ${r.pid})`))} |`,
    );
    p(
      `| step calls / stored steps (calls before the result was stored are allowed) | ${a.calls.calls} / ${a.calls.steps} (${a.calls.calls - a.calls.steps - a.reruns.length} allowed retries) |`,
    );
    p(`| stored steps without any call (instrumentation check) | ${a.noEffect} |`);
    p(
      `| completed with a wrong result or not 4 stored steps | ${wrong.length}${examples(wrong.map((e) => e.id))} |`,
    );
    p(`| durable 1 s sleeps that ended before their wake time | ${a.early.length}${examples(a.early)} |`);
    p(`| executions of the workflow in Postgres (4 warm-up runs and the canary included) | ${a.total} |`);
    p(
      `| not accepted (gave up) | ${notAccepted.length}${examples(notAccepted.map((r) => `run ${r.i}: ${r.gaveUp}`))} |`,
    );
    p(`| client retries | ${list(stats.retries)} |`);
    if (stats.unexpected.size) p(`| unexpected answers | ${list(stats.unexpected)} |`);
    p(`| answers lost, then replayed by Idempotency-Key | ${records.filter((r) => r.replayed).length} |`);
    p(
      `| processes that died on their own | ${sys.diedOnTheirOwn.length ? sys.diedOnTheirOwn.map((d) => `${d.name} at ${secs(d.atMs)} (${d.how})`).join("; ") : "none"} |`,
    );
    p(
      `| restarts that needed more than one try | ${sys.problems.length ? sys.problems.join("; ") : "none"} |`,
    );
    p(`| recovery canary (a new run with ?wait=30 after the drain) | ${canaryResult.note} |`);
    const swept = sys.sweepTotals();
    p(
      `| scheduler repairs (its "swept" log lines) | queued runs whose job Redis lost, enqueued again ${swept.requeued ?? 0}, ` +
        `timers fired from Postgres ${swept.timersFired ?? 0}, ` +
        `stranded runs released ${swept.stranded ?? 0}, workers marked offline ${swept.workersOffline ?? 0} |`,
    );
    p();
    p(
      `Durations: setup ${secs(setupMs)}, load ${secs(lastAccepted)} (last run accepted), ` +
        `faults until ${secs(faultsEnd - loadStart)}, load ended at ${secs(loadEnd - loadStart)}, ` +
        `drain ${secs(drainMs)} (until every accepted run finished), total ${secs(endMs - begin)}.`,
    );
    p(
      `Run duration, created → completed: p50 ${secs(durations.p50 ?? 0)}, p99 ${secs(durations.p99 ?? 0)}, ` +
        `max ${secs(durations.max ?? 0)} (the workflow itself takes ~1.2 s).`,
    );

    const failures: string[] = [];
    if (lost) failures.push(`${lost} lost`);
    if (a.reruns.length) failures.push(`${a.reruns.length} stored steps re-run`);
    if (failed.length) failures.push(`${failed.length} failed`);
    if (cancelled.length) failures.push(`${cancelled.length} cancelled`);
    if (duplicates) failures.push(`${duplicates} duplicates`);
    if (wrong.length) failures.push(`${wrong.length} wrong results`);
    if (a.early.length) failures.push(`${a.early.length} sleeps ended early`);
    if (notAccepted.length) failures.push(`${notAccepted.length} never accepted`);
    if (sys.diedOnTheirOwn.length) failures.push(`${sys.diedOnTheirOwn.length} processes died on their own`);
    if (applied.some((f) => f.error)) failures.push("a fault could not be applied");
    if (!canaryResult.ok) failures.push("the canary run did not complete");
    p();
    p(failures.length ? `RESULT: FAIL (${failures.join(", ")})` : "RESULT: PASS");
    process.stdout.write(`${out.join("\n")}\n`);

    for (const d of sys.diedOnTheirOwn)
      log(`--- ${d.name} (died at ${secs(d.atMs)}), last output:\n${d.tail}`);
    if (failures.length && !args.keep) log("rerun with --keep to keep the data dir and every process's log");
    process.exitCode = failures.length ? 1 : 0;
  } finally {
    await cleanup();
  }
}

main()
  .catch((err) => {
    log(`failed: ${err instanceof Error ? err.stack : err}`);
    process.exitCode = 1;
  })
  // Keep-alive sockets to the (stopped) api must not hold the process open.
  .finally(() => process.exit());
