// `npm run bench [-- --full | --smoke] [--out <dir>] [--apis N] [--workers N] [--concurrency N]
//                  [--rates 50,100,… (runs/s)] [--window <seconds per rate>] [--clients 8,32,64]
//                  [--no-fsync] [--restate <peers-bench dir>]`
//
// Starts the real system (system.ts), measures the floor (floor.ts) and Spool (scenarios.ts) on the
// same Postgres and Redis, judges the targets (targets.ts), then writes <out>/<YYYY-MM-DD>.json and
// .md and prints the Markdown. With --restate, Restate is measured before and after (peers.ts).
// Every figure in the output is measured in this run; see docs/benchmarks.md.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { measureFloor } from "./floor.js";
import { checkPeersDir, type PeerRun, runRestate } from "./peers.js";
import { type BenchResult, renderMarkdown } from "./report.js";
import {
  eventsScenario,
  latencyScenario,
  peerLoadScenario,
  pushScenario,
  throughputScenario,
} from "./scenarios.js";
import { procMemMiB } from "./stats.js";
import { ROOT, startSystem, stopAll, stopAllAndExit, stopAllOnSignals } from "./system.js";
import { judgeTargets } from "./targets.js";

const { values: args } = parseArgs({
  options: {
    full: { type: "boolean", default: false },
    smoke: { type: "boolean", default: false },
    out: { type: "string" },
    workers: { type: "string", default: "1" },
    apis: { type: "string", default: "1" },
    concurrency: { type: "string", default: "32" }, // SPOOL_WORKER_CONCURRENCY's default
    rates: { type: "string" },
    window: { type: "string" },
    clients: { type: "string" },
    // The embedded Postgres is durable (fsync on) unless this says otherwise: production is.
    "no-fsync": { type: "boolean", default: false },
    // A checkout of ../shared/peers-bench (npm install done there): Restate measured before and after.
    restate: { type: "string" },
  },
  strict: true,
});

const mode = args.smoke ? "smoke" : args.full ? "full" : "quick";
const workers = Number(args.workers);
const apis = Number(args.apis);
const concurrency = Number(args.concurrency);
if (!Number.isInteger(workers) || workers < 1 || workers > 16) throw new Error("--workers must be 1..16");
if (!Number.isInteger(apis) || apis < 1 || apis > 8) throw new Error("--apis must be 1..8");
if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 1000)
  throw new Error("--concurrency must be 1..1000");

const PLANS = {
  smoke: {
    latency: { runs: 5, warmup: 2, timeoutMs: 30_000 },
    throughput: { rates: [10], windowMs: 1_000, drainTimeoutMs: 10_000, pauseMs: 200 },
    events: { batches: 1, publishers: 4, timeoutMs: 30_000 },
    floor: { jobs1: 20, jobsN: 100, inserts1: 20, insertsN: 100, timeoutMs: 20_000 },
    push: { runs: 5, warmup: 2, windowMs: 1_000 },
    closedLoop: { clients: [2], windowMs: 1_000, rampupMs: 500 },
  },
  quick: {
    // Warm-up to a steady state: after 50 runs the api and worker still spent ~35 % more CPU per
    // run (V8 still optimizing) than after 1,000; Restate gets the same warm-up (peerPlan).
    latency: { runs: 500, warmup: 1_000, timeoutMs: 60_000 },
    throughput: {
      rates: [10, 25, 50, 100, 200, 400, 800],
      windowMs: 5_000,
      drainTimeoutMs: 15_000,
      pauseMs: 1_000,
    },
    events: { batches: 10, publishers: 4, timeoutMs: 30_000 },
    floor: { jobs1: 500, jobsN: 5_000, inserts1: 500, insertsN: 5_000, timeoutMs: 30_000 },
    push: { runs: 300, warmup: 300, windowMs: 10_000 },
    // As ../shared/peers-bench measures Restate and DBOS (--conc 8,32,64 --duration 10 --rampup 2).
    closedLoop: { clients: [8, 32, 64], windowMs: 10_000, rampupMs: 2_000 },
  },
  full: {
    latency: { runs: 2_000, warmup: 2_000, timeoutMs: 300_000 },
    throughput: {
      rates: [10, 25, 50, 100, 200, 400, 800],
      windowMs: 20_000,
      drainTimeoutMs: 60_000,
      pauseMs: 3_000,
    },
    events: { batches: 50, publishers: 8, timeoutMs: 120_000 },
    floor: { jobs1: 2_000, jobsN: 20_000, inserts1: 2_000, insertsN: 20_000, timeoutMs: 60_000 },
    push: { runs: 1_000, warmup: 500, windowMs: 30_000 },
    closedLoop: { clients: [8, 32, 64], windowMs: 20_000, rampupMs: 2_000 },
  },
} as const;
const base = PLANS[mode];
const rates = args.rates ? args.rates.split(",").map(Number) : [...base.throughput.rates];
const windowMs = args.window ? Number(args.window) * 1000 : base.throughput.windowMs;
if (rates.some((r) => !Number.isFinite(r) || r <= 0 || r > 10_000)) throw new Error("--rates: e.g. 20,40,80");
if (!Number.isFinite(windowMs) || windowMs < 100 || windowMs > 600_000)
  throw new Error("--window: seconds, 0.1..600");
const clients = args.clients ? args.clients.split(",").map(Number) : [...base.closedLoop.clients];
if (clients.some((c) => !Number.isInteger(c) || c < 1 || c > 1000))
  throw new Error("--clients: e.g. 8,32,64");
const plan = {
  ...base,
  throughput: { ...base.throughput, rates, windowMs },
  closedLoop: { ...base.closedLoop, clients },
};

const peersDir = args.restate === undefined ? null : checkPeersDir(args.restate);
// As many sequential calls as Spool's runs after as many warm-up calls, and the closed loops of this run.
const peerPlan = {
  seq: plan.latency.runs,
  warmup: plan.latency.warmup,
  clients: plan.closedLoop.clients,
  durationSec: plan.closedLoop.windowMs / 1000,
  rampupSec: plan.closedLoop.rampupMs / 1000,
};

const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);
const outDir = resolve(args.out ?? join(ROOT, "bench", "results"));

function git(...a: string[]): string | null {
  try {
    return execFileSync("git", a, {
      cwd: ROOT,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  } catch {
    return null;
  }
}

function machine() {
  const dirty = git("status", "--porcelain", "--untracked-files=no");
  return {
    date: new Date().toISOString(),
    cores: cpus().length,
    cpuModel: cpus()[0]?.model ?? null,
    memoryGiB: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    commit: git("rev-parse", "--short", "HEAD"),
    workingTreeDirty: dirty === null ? null : dirty.length > 0,
  };
}

stopAllOnSignals();

async function main() {
  const restate: PeerRun[] = [];
  if (peersDir) restate.push(await runRestate(peersDir, peerPlan, log));
  const started = performance.now();
  const loadBefore = loadavg();
  log(`mode ${mode}; starting the system`);
  const durable = !args["no-fsync"];
  const sys = await startSystem({ apis, workers, workerConcurrency: concurrency, durable });
  log(`system up in ${Math.round(performance.now() - started)} ms`);

  log("floor: bare BullMQ round trips and bare Postgres inserts");
  const floor = await measureFloor(
    { databaseUrl: sys.databaseUrl, redisUrl: sys.redisUrl },
    { ...plan.floor, concurrency },
  );
  log(`latency: ${plan.latency.runs} runs one at a time (after ${plan.latency.warmup} warm-up runs)`);
  const latency = await latencyScenario(sys, plan.latency);
  const throughput = await throughputScenario(sys, plan.throughput, (pid) => procMemMiB(pid, "VmHWM"));
  const closedLoop = await peerLoadScenario(sys, plan.closedLoop);
  log(`events: ${plan.events.batches * 100} events into a batch_size 100 trigger`);
  const events = await eventsScenario(sys, plan.events);
  log(
    `push path: ${plan.push.runs} runs one at a time through a remote worker, in turns with in-cluster runs`,
  );
  const push = await pushScenario(sys, { ...plan.push, concurrency });
  for (const app of [...sys.apis, ...sys.workers, sys.remote, sys.scheduler]) {
    if (!app.alive) throw new Error(`${app.name} died during the benchmark\n${app.tail}`);
  }
  const durationSec = Math.round((performance.now() - started) / 100) / 10;
  const loadAfter = loadavg();
  const machineAfter = machine();
  let peersFailed: string | undefined;
  if (peersDir) {
    await stopAll();
    // Spool's figures are kept whatever becomes of this run; the report says what failed.
    try {
      restate.push(await runRestate(peersDir, peerPlan, log));
    } catch (err) {
      peersFailed = `the run after Spool's failed: ${err instanceof Error ? err.message.split("\n")[0] : String(err)}`;
      log(peersFailed);
    }
  }

  const measured: Omit<BenchResult, "targets"> & { setup: { plan: unknown } } = {
    mode,
    machine: machineAfter,
    loadAverage: {
      before: loadBefore.map((x) => Math.round(x * 100) / 100),
      after: loadAfter.map((x) => Math.round(x * 100) / 100),
    },
    setup: {
      apis,
      workers,
      workerConcurrency: concurrency,
      services: sys.servicesStarted
        ? durable
          ? "embedded (scripts/services.mjs --durable: temporary Postgres 18, fsync=on, synchronous_commit=on, as production; redis-server without persistence)"
          : "embedded (scripts/services.mjs, --no-fsync: temporary Postgres 18 with fsync=off, synchronous_commit=off; not durable; redis-server without persistence)"
        : "given by DATABASE_URL / REDIS_URL",
      plan,
    },
    floor,
    latency,
    throughput,
    closedLoop,
    events,
    push,
    peers: peersDir ? { restate, ...(peersFailed ? { failed: peersFailed } : {}) } : null,
    durationSec,
  };
  const result = { ...measured, targets: judgeTargets(measured) };
  mkdirSync(outDir, { recursive: true });
  const day = result.machine.date.slice(0, 10);
  const jsonPath = join(outDir, `${day}.json`);
  const mdPath = join(outDir, `${day}.md`);
  const md = renderMarkdown(result);
  writeFileSync(jsonPath, `${JSON.stringify(result, null, 2)}\n`);
  writeFileSync(mdPath, md);
  process.stdout.write(`${md}\n`);
  log(`wrote ${jsonPath} and ${mdPath}`);
}

const isMain = process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  main()
    .then(
      () => 0,
      (err: unknown) => {
        log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
        return 1;
      },
    )
    .then(stopAllAndExit);
}
