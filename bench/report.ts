// Renders a benchmark result as Markdown: each of our figures beside the floor of the same run.
import type { FloorResult } from "./floor.js";
import type { PeerRun } from "./peers.js";
import type {
  EventsResult,
  LatencyResult,
  PeerLoadPoint,
  PushResult,
  ThroughputResult,
} from "./scenarios.js";
import { fixed as f, type Summary } from "./stats.js";
import { compareWithRestate, type TargetVerdict } from "./targets.js";

export interface BenchResult {
  mode: string;
  machine: {
    date: string;
    cores: number;
    cpuModel: string | null;
    memoryGiB: number;
    node: string;
    platform: string;
    commit: string | null;
    workingTreeDirty: boolean | null;
  };
  loadAverage: { before: number[]; after: number[] };
  setup: { apis?: number; workers: number; workerConcurrency: number; services: string };
  floor: FloorResult;
  latency: LatencyResult;
  throughput: ThroughputResult;
  closedLoop: PeerLoadPoint[];
  events: EventsResult;
  push: PushResult;
  /** Restate runs of the same sitting (--restate): one before Spool's system started, one after it stopped. */
  peers?: {
    restate: PeerRun[];
    /** Why a Restate run is missing (its script failed); the runs that succeeded are kept. */
    failed?: string;
  } | null;
  targets: TargetVerdict[];
  durationSec: number;
}

const ratio = (ours: number | null | undefined, floor: number | null | undefined) => {
  if (ours === null || ours === undefined || !floor) return "n/a";
  const x = ours / floor;
  return `${x >= 10 ? x.toFixed(0) : x >= 1 ? x.toFixed(1) : x.toPrecision(2)}×`;
};
const pct = (s: Summary) => `${f(s.p50)} / ${f(s.p95)} / ${f(s.p99)}`;

export function renderMarkdown(r: BenchResult): string {
  const m = r.machine;
  const { floor, latency, throughput, events } = r;
  const bull1 = floor.bullmq.concurrency1;
  const bullN = floor.bullmq.concurrencyN;
  const pg1 = floor.postgres.sequential;
  const pgN = floor.postgres.concurrent;
  const completedRates = throughput.rates.filter((x) => x.completedRunsPerSec !== null);
  const bestRuns = completedRates.length
    ? Math.max(...completedRates.map((x) => x.completedRunsPerSec ?? 0))
    : null;
  const bestSteps = completedRates.length ? Math.max(...completedRates.map((x) => x.stepsPerSec ?? 0)) : null;
  const out: string[] = [];
  out.push(`# Spool benchmark, ${m.date.slice(0, 10)} (${r.mode} mode)`, "");
  out.push(
    `- Machine: ${m.cores} cores (${m.cpuModel ?? "unknown CPU"}), ${m.memoryGiB} GiB RAM, ${m.platform}, Node ${m.node}`,
    `- Commit: ${m.commit ?? "unknown"}${m.workingTreeDirty ? " (working tree had uncommitted changes)" : ""}; run at ${m.date}; took ${r.durationSec} s`,
    `- Load average (1/5/15 min) before: ${r.loadAverage.before.join(" / ")}, after: ${r.loadAverage.after.join(" / ")}`,
    `- System: ${r.setup.apis ?? 1} api(s), ${r.setup.workers} worker(s) at concurrency ${r.setup.workerConcurrency}, scheduler; ${r.setup.services}`,
    "",
  );

  out.push(
    "## Against the targets",
    "",
    ...(r.mode === "smoke"
      ? ["Smoke mode: too few runs to judge anything by; the verdicts only show the report's shape.", ""]
      : []),
    "| target | this run | met |",
    "|---|---|---|",
    ...r.targets.map(
      (t) => `| ${t.target} | ${t.measured} | ${t.met === null ? "not judged" : t.met ? "yes" : "**no**"} |`,
    ),
    "",
  );

  const restate = r.peers?.restate ?? [];
  if (restate.length > 0) {
    const when = (p: PeerRun) => p.startedAt.slice(11, 19) || "?";
    out.push(
      "## Beside Restate, in the same sitting",
      "",
      `${restate[0]?.server}, measured by the peers' own script (\`--restate\`) before Spool's system started (${when(restate[0]!)} UTC)${restate[1] ? ` and after it stopped (${when(restate[1])} UTC)` : ""}, with the same number of sequential calls and the same closed loops. Ahead: better than every Restate run; behind: worse than every one; level: equal to every one.`,
      "",
      ...(r.peers?.failed ? [`Restate after Spool: ${r.peers.failed}`, ""] : []),
      `| figure | Spool | ${restate.map((p) => `Restate ${when(p)}`).join(" | ")} | Spool stands |`,
      `|---|---|${restate.map(() => "---").join("|")}|---|`,
      ...compareWithRestate(r, restate).map(
        (c) =>
          `| ${c.figure} | ${f(c.ours, c.digits)} | ${c.restate.map((x) => f(x, c.digits)).join(" | ")} | ${c.standing ?? "n/a"} |`,
      ),
      "",
    );
  }

  out.push(
    `## Latency: one run at a time (${latency.runs} runs after ${latency.warmupRuns} warm-up runs)`,
    "",
    "| figure (ms) | p50 / p95 / p99 | floor, same run (p50 / p95 / p99) | ours ÷ floor (p50) |",
    "|---|---|---|---|",
    `| run → completed, client-observed (POST …/run?wait=30) | ${pct(latency.runToCompletedMs)} | BullMQ add → completed, concurrency 1: ${pct(bull1.roundTripMs)} | ${ratio(latency.runToCompletedMs.p50, bull1.roundTripMs.p50)} |`,
    `| step → next step gap in the worker (measured in the worker, ${latency.stepGapMs.n} gaps) | ${pct(latency.stepGapMs)} | Postgres INSERT + commit: ${pct(pg1.insertCommitMs)} | ${ratio(latency.stepGapMs.p50, pg1.insertCommitMs.p50)} |`,
    `| breakdown: created_at → completed_at as stored (server side) | ${pct(latency.serverCreatedToCompletedMs)} | | |`,
    `| breakdown: created_at → started_at (queue wait + worker pickup) | ${pct(latency.serverCreatedToStartedMs)} | | |`,
    `| breakdown: execution started_at → first step started_at | ${pct(latency.startedToFirstStepMs)} | | |`,
    `| breakdown: last step completed_at → execution completed_at | ${pct(latency.lastStepToCompletedMs)} | | |`,
    `| breakdown: stored completed_at → client has the ?wait response | ${pct(latency.completedToResponseMs)} | | |`,
    "",
    `Postgres WAL flushes (disk syncs) per run, one at a time: ${f(latency.walFlushesPerRun, 2)} (pg_stat_io; the whole database, the scheduler's writes included).`,
    "",
  );

  out.push(
    `## Throughput: open-loop arrivals of bench-3-steps (${throughput.rates[0]?.windowMs ?? 0} ms per rate)`,
    "",
    "End to end = the run's stored completed_at − its scheduled arrival time on the client's clock (same host).",
    "",
    "| offered runs/s | sent | completed | completed runs/s | steps/s | end-to-end p50 / p99 (ms) | POST accept p99 (ms) | client send lag p99 (ms) | outcome |",
    "|---|---|---|---|---|---|---|---|---|",
  );
  for (const x of throughput.rates) {
    const outcome = x.aborted
      ? `aborted: ${x.aborted}`
      : x.notCompleted > 0
        ? `${x.notCompleted} runs not completed within the drain bound`
        : x.httpErrors
          ? `${x.httpErrors} HTTP errors`
          : "ok";
    out.push(
      `| ${x.offeredPerSec} | ${x.sent} | ${x.completed} | ${f(x.completedRunsPerSec)} | ${f(x.stepsPerSec)} | ${f(x.endToEndMs.p50)} / ${f(x.endToEndMs.p99)} | ${f(x.acceptMs.p99)} | ${f(x.sendLagMs.p99)} | ${outcome} |`,
    );
  }
  for (const s of throughput.skipped)
    out.push(`| ${s.offeredPerSec} | 0 | 0 | n/a | n/a | n/a | n/a | n/a | ${s.reason} |`);
  const cpuKeys = [...new Set(throughput.rates.flatMap((x) => Object.keys(x.cpuPercent)))];
  if (cpuKeys.length) {
    out.push(
      "",
      `CPU use per rate, from the first arrival to the end of the drain, in % of one core (this machine has ${m.cores} cores, so ${m.cores * 100} % is all of it):`,
      "",
      `| offered runs/s | ${cpuKeys.join(" | ")} |`,
      `|---|${cpuKeys.map(() => "---").join("|")}|`,
    );
    for (const x of throughput.rates) {
      out.push(`| ${x.offeredPerSec} | ${cpuKeys.map((k) => f(x.cpuPercent[k], 0)).join(" | ")} |`);
    }
    const perRunKeys = [...new Set(throughput.rates.flatMap((x) => Object.keys(x.cpuMsPerRun)))];
    out.push(
      "",
      "CPU milliseconds per completed run (CPU time used ÷ runs completed; little affected by other load):",
      "",
      `| offered runs/s | ${perRunKeys.join(" | ")} |`,
      `|---|${perRunKeys.map(() => "---").join("|")}|`,
    );
    for (const x of throughput.rates) {
      out.push(`| ${x.offeredPerSec} | ${perRunKeys.map((k) => f(x.cpuMsPerRun[k], 1)).join(" | ")} |`);
    }
  }
  out.push(
    "",
    `Highest offered rate whose end-to-end p99 stayed under 500 ms: **${throughput.maxRateWithP99Under500ms ?? "none"}${throughput.maxRateWithP99Under500ms ? " runs/s" : ""}**.`,
    "",
    "| figure | ours (best rate) | floor, same run | ours ÷ floor |",
    "|---|---|---|---|",
    `| runs/s vs BullMQ jobs/s (concurrency ${bullN.concurrency}, ${bullN.jobs} no-op jobs) | ${f(bestRuns)} | ${f(bullN.jobsPerSec)} | ${ratio(bestRuns, bullN.jobsPerSec)} |`,
    `| steps/s vs Postgres INSERT + commit/s (${pgN.clients} clients, ${pgN.inserts} inserts) | ${f(bestSteps)} | ${f(pgN.insertsPerSec)} | ${ratio(bestSteps, pgN.insertsPerSec)} |`,
    "",
  );

  const peerLoad = r.closedLoop;
  if (peerLoad.length > 0) {
    const keys = [...new Set(peerLoad.flatMap((x) => Object.keys(x.cpuPercent)))];
    out.push(
      `## Closed loop, as ../shared/peers-bench measures the peers (${(peerLoad[0]?.windowMs ?? 0) / 1000} s measured per row, after a ramp-up)`,
      "",
      "Each client sends its next run (POST …/run?wait=30) as soon as its last one answered; runs answered inside the window count. CPU in % of one core over the window.",
      "",
      `| clients | runs/s | run p50 / p99 (ms) | failed | ${keys.join(" | ")} | machine CPU ms per run |`,
      `|---|---|---|---|${keys.map(() => "---").join("|")}|---|`,
      ...peerLoad.map(
        (x) =>
          `| ${x.clients} | ${f(x.runsPerSec)} | ${f(x.runMs.p50)} / ${f(x.runMs.p99)} | ${x.failed} | ${keys.map((k) => f(x.cpuPercent[k], 0)).join(" | ")} | ${f(x.machineCpuMsPerRun, 2)} |`,
      ),
      "",
    );
  }

  out.push(
    `## Events: publish into a batch trigger (batch_size ${events.batchSize})`,
    "",
    "| figure | value |",
    "|---|---|",
    `| events published (${events.publishers} concurrent publishers, one event per request) | ${events.published} (${events.publishErrors} errors) |`,
    `| publish rate | ${f(events.publishPerSec)} events/s |`,
    `| publish request p50 / p95 / p99 (ms) | ${pct(events.publishMs)} |`,
    `| full batches fired / expected | ${events.batchesFired} / ${events.batchesExpected} |`,
    `| 100th event created_at → batch run started_at, p50 / p95 / p99 (ms) | ${pct(events.lastEventToRunStartedMs)} |`,
    `| 100th event created_at → batch run created_at (firing only), p50 / p95 / p99 (ms) | ${pct(events.lastEventToRunCreatedMs)} |`,
    "",
  );

  const { push } = r;
  const loop = push.closedLoop;
  out.push(
    "## The remote push path (a createWorker process with only the API's address and a key)",
    "",
    `The same three no-op steps, pushed over HTTP to a remote worker that reports each step through the worker protocol, beside the in-cluster worker in the same sitting. Closed loop: ${loop.remote.concurrency} clients, each starting the next run (POST …/run?wait=30) as soon as its last one finished, for ${f(loop.remote.windowMs / 1000, 0)} s per path, in halves taken in turns (remote, in-cluster, in-cluster, remote).`,
    "",
    "| figure | remote push worker | in-cluster worker | remote ÷ in-cluster |",
    "|---|---|---|---|",
    `| one run at a time, client-observed p50 / p95 / p99 (ms; ${push.serialMs.n} runs each, in turns: an in-cluster run, then a remote one) | ${pct(push.serialMs)} | ${pct(push.inClusterSerialMs)} | ${ratio(push.serialMs.p50, push.inClusterSerialMs.p50)} (p50) |`,
    `| the same remote runs against the in-cluster latency runs at the bench's start (${latency.runToCompletedMs.n} runs, above) | ${pct(push.serialMs)} | ${pct(latency.runToCompletedMs)} | ${ratio(push.serialMs.p50, latency.runToCompletedMs.p50)} (p50) |`,
    `| closed loop: runs/s (completed / failed) | ${f(loop.remote.runsPerSec)} (${loop.remote.completed} / ${loop.remote.failed}) | ${f(loop.inCluster.runsPerSec)} (${loop.inCluster.completed} / ${loop.inCluster.failed}) | ${ratio(loop.remote.runsPerSec, loop.inCluster.runsPerSec)} |`,
    `| closed loop: run → completed p50 / p95 / p99 (ms) | ${pct(loop.remote.endToEndMs)} | ${pct(loop.inCluster.endToEndMs)} | ${ratio(loop.remote.endToEndMs.p50, loop.inCluster.endToEndMs.p50)} (p50) |`,
    ...Object.keys(loop.remote.cpuMsPerRun).map(
      (k) =>
        `| closed loop: CPU per run, ${k} (ms) | ${f(loop.remote.cpuMsPerRun[k], 2)} | ${f(loop.inCluster.cpuMsPerRun[k], 2)} | ${ratio(loop.remote.cpuMsPerRun[k], loop.inCluster.cpuMsPerRun[k])} |`,
    ),
    "",
  );

  out.push(
    "## Floor (same Redis and Postgres, same run)",
    "",
    "| figure | value |",
    "|---|---|",
    `| BullMQ add → completed, concurrency 1, ${bull1.jobs} jobs one at a time, p50 / p95 / p99 (ms) | ${pct(bull1.roundTripMs)} (${f(bull1.jobsPerSec)} jobs/s) |`,
    `| BullMQ, concurrency ${bullN.concurrency}, ${bullN.jobs} queued no-op jobs drained | ${f(bullN.jobsPerSec)} jobs/s |`,
    `| Postgres INSERT + commit, 1 client, ${pg1.inserts} inserts, p50 / p95 / p99 (ms) | ${pct(pg1.insertCommitMs)} (${f(pg1.insertsPerSec)} inserts/s) |`,
    `| Postgres INSERT + commit, ${pgN.clients} clients, ${pgN.inserts} inserts | ${f(pgN.insertsPerSec)} inserts/s |`,
    "",
  );

  const mem = throughput.memory;
  out.push(
    "## Memory",
    "",
    `| process | peak VmRSS during the throughput scenario (MiB, sampled every ${mem.intervalMs} ms, ${mem.samples} samples) | VmHWM at its end (MiB, lifetime peak) |`,
    "|---|---|---|",
  );
  for (const name of Object.keys(mem.peakRssMiB)) {
    out.push(`| ${name} | ${f(mem.peakRssMiB[name])} | ${f(mem.vmHwmMiB[name])} |`);
  }
  out.push("");
  return out.join("\n");
}
