// How a benchmark run is judged against the targets and set beside Restate's runs (bench/targets.ts,
// bench/peers.ts): from figures given here, so each verdict's boundary and gaps are checked exactly.
import { describe, expect, it } from "vitest";
import { readRestateResults } from "../../bench/peers.js";
import type { BenchResult } from "../../bench/report.js";
import { judgeTargets, TARGETS } from "../../bench/targets.js";

const summary = (p50: number, p99: number) => ({ n: 500, min: p50, p50, p95: p99, p99, max: p99, mean: p50 });

/** A run that meets every absolute target; `change` edits it. */
function run(change: (r: Omit<BenchResult, "targets">) => void = () => {}) {
  const r = {
    mode: "quick",
    setup: { apis: 1, workers: 1, workerConcurrency: 32, services: "embedded" },
    latency: { runToCompletedMs: summary(6, 17) },
    throughput: {
      rates: [
        {
          offeredPerSec: 400,
          completedRunsPerSec: 399.6,
          endToEndMs: summary(20, 43),
          cpuMsPerRun: { api: 0.6, workers: 1.1, scheduler: 0.1, postgres: 1.3 },
        },
      ],
      maxRateWithP99Under500ms: 800,
    },
    closedLoop: [
      { clients: 8, runsPerSec: 540, machineCpuMsPerRun: 3.2 },
      { clients: 32, runsPerSec: 750, machineCpuMsPerRun: 2.2 },
    ],
    push: {
      serialMs: summary(11, 20),
      inClusterSerialMs: summary(6, 17),
      closedLoop: {
        remote: { concurrency: 32, runsPerSec: 400 },
        inCluster: { concurrency: 32, runsPerSec: 700 },
      },
    },
    peers: null,
  } as unknown as Omit<BenchResult, "targets">;
  change(r);
  return r;
}

const verdict = (r: Omit<BenchResult, "targets">, starts: string) => {
  const found = judgeTargets(r).filter((v) => v.target.startsWith(starts));
  expect(found, starts).toHaveLength(1);
  return found[0]!;
};

const restateResults = (serial: [number, number, number], loops: [number, number][]) =>
  JSON.stringify({
    meta: { restateServer: "restate-server 1.7.12", startedAt: "2026-11-27T20:00:00.000Z" },
    results: [
      {
        sequential: { n: 500, p50: serial[0], p95: serial[1], p99: serial[2] },
        throughput: loops.map(([concurrency, perSec]) => ({
          concurrency,
          perSec,
          p50: 10,
          p99: 30,
          cpu: { machine: 180 },
        })),
      },
    ],
  });

describe("the benchmark's targets", () => {
  it("a run within every bound meets each absolute target; Restate is not judged without --restate", () => {
    const verdicts = judgeTargets(run());
    const absolute = verdicts.filter((v) => !v.target.includes("Restate"));
    expect(absolute.map((v) => [v.target, v.met])).toEqual(absolute.map((v) => [v.target, true]));
    expect(verdict(run(), "ahead of Restate")).toMatchObject({ met: null });
  });

  it("each bound is judged on its own figure", () => {
    const slowTail = run((r) => {
      r.latency.runToCompletedMs = summary(6, TARGETS.serialP99Ms + 0.1);
    });
    expect(verdict(slowTail, "one run at a time, client-observed p99").met).toBe(false);
    expect(verdict(slowTail, "one run at a time, client-observed p50").met).toBe(true);

    const busyPostgres = run((r) => {
      r.throughput.rates[0]!.cpuMsPerRun.postgres = TARGETS.postgresCpuMsPerRun + 0.1;
    });
    expect(verdict(busyPostgres, "CPU per run at 400 runs/s offered: Postgres").met).toBe(false);
    expect(verdict(busyPostgres, "CPU per run at 400 runs/s offered: api").met).toBe(true);

    // In-cluster 2.5× the remote path's runs/s: not within 2× under load, still within it one at a time.
    const slowRemote = run((r) => {
      r.push.closedLoop.remote.runsPerSec = 280;
    });
    expect(verdict(slowRemote, "remote push path within 2× of in-cluster under load").met).toBe(false);
    expect(verdict(slowRemote, "remote push path within 2× of in-cluster, one run").met).toBe(true);

    const lowCapacity = run((r) => {
      r.throughput.maxRateWithP99Under500ms = 200;
    });
    expect(verdict(lowCapacity, "≥ 400 runs/s sustained").met).toBe(false);
  });

  it("the remote path one at a time is judged against the in-cluster runs taken in turns with it", () => {
    // 11 ms is 1.83× the latency figure from the bench's start (6 ms), but 2.2× the in-cluster runs
    // measured beside it.
    const fasterBeside = run((r) => {
      r.push.inClusterSerialMs = summary(5, 15);
    });
    expect(verdict(fasterBeside, "remote push path within 2× of in-cluster, one run")).toMatchObject({
      met: false,
      measured: "11.0 ms against 5.0 ms in-cluster, in turns: 2.20×",
    });
  });

  it("a figure exactly at its bound meets it", () => {
    const atBounds = run((r) => {
      r.latency.runToCompletedMs = summary(TARGETS.serialP50Ms, TARGETS.serialP99Ms);
      r.throughput.maxRateWithP99Under500ms = TARGETS.sustainedRunsPerSec;
      r.throughput.rates[0]!.cpuMsPerRun = { api: 1, workers: 2.5, scheduler: 0.5, postgres: 2 };
      r.push.serialMs = summary(2 * TARGETS.serialP50Ms, 40);
      r.push.inClusterSerialMs = summary(TARGETS.serialP50Ms, 30);
      r.push.closedLoop.remote.runsPerSec = 350; // in-cluster 700: exactly 2×
    });
    const absolute = judgeTargets(atBounds).filter((v) => !v.target.includes("Restate"));
    expect(absolute.map((v) => [v.target, v.met])).toEqual(absolute.map((v) => [v.target, true]));
  });

  it("a remote path that completes nothing under load fails its target rather than going unjudged", () => {
    const stalled = run((r) => {
      r.push.closedLoop.remote.runsPerSec = null;
    });
    expect(verdict(stalled, "remote push path within 2× of in-cluster under load")).toMatchObject({
      met: false,
      measured: expect.stringContaining("no remote run completed"),
    });
  });

  it("the rate and CPU targets are for one api and one worker, and need the 400 runs/s rate", () => {
    const twoWorkers = run((r) => {
      r.setup.workers = 2;
    });
    for (const t of ["≥ 400 runs/s sustained", "CPU per run at 400 runs/s offered: api"])
      expect(verdict(twoWorkers, t)).toMatchObject({
        met: null,
        measured: expect.stringContaining("2 worker(s)"),
      });

    const otherRates = run((r) => {
      r.throughput.rates[0]!.offeredPerSec = 300;
    });
    expect(verdict(otherRates, "CPU per run at 400 runs/s offered: Postgres")).toMatchObject({
      met: null,
      measured: expect.stringContaining("no 400 runs/s rate"),
    });
    // Rates that never reach 400 runs/s cannot tell whether it holds, even when every one passed.
    const lowRates = run((r) => {
      r.throughput.rates[0]!.offeredPerSec = 300;
      r.throughput.maxRateWithP99Under500ms = 300;
    });
    expect(verdict(lowRates, "≥ 400 runs/s sustained")).toMatchObject({
      met: null,
      measured: expect.stringContaining("no rate of 400 runs/s or more"),
    });
    // The 400 runs/s rate ran, but without Postgres' CPU (a Postgres this run did not start).
    const givenPostgres = run((r) => {
      r.throughput.rates[0]!.cpuMsPerRun.postgres = null;
    });
    expect(verdict(givenPostgres, "CPU per run at 400 runs/s offered: Postgres")).toMatchObject({
      met: null,
      measured: expect.stringContaining("no CPU figure for Postgres"),
    });
  });

  it("beside Restate, only a figure better than every Restate run of the sitting is ahead", () => {
    const before = readRestateResults(
      restateResults(
        [6.5, 10, 14],
        [
          [8, 500],
          [32, 700],
        ],
      ),
    );
    const after = readRestateResults(
      restateResults(
        [5.9, 9, 12],
        [
          [8, 560],
          [32, 720],
        ],
      ),
    );
    const r = run((x) => {
      x.peers = { restate: [before, after] };
    });
    // p50 6.0: between 5.9 and 6.5. p99 17: behind both. 8 clients 540/s: between. 32 clients 750/s: ahead.
    expect(verdict(r, "ahead of Restate: one at a time, p50")).toMatchObject({ met: false });
    expect(verdict(r, "ahead of Restate: one at a time, p50").measured).toContain("between them");
    expect(verdict(r, "ahead of Restate: one at a time, p99")).toMatchObject({ met: false });
    expect(verdict(r, "ahead of Restate: one at a time, p99").measured).toContain("behind all 2");
    expect(verdict(r, "ahead of Restate: 8 clients, runs/s")).toMatchObject({ met: false });
    expect(verdict(r, "ahead of Restate: 32 clients, runs/s")).toMatchObject({ met: true });
    // The CPU rows inform the comparison table but are no target.
    expect(judgeTargets(r).some((v) => v.target.includes("machine CPU"))).toBe(false);
  });

  it("equal to every Restate run is level, not ahead; a figure no run measured is n/a", () => {
    const one = readRestateResults(restateResults([6, 10, 17], [[8, 540]]));
    const r = run((x) => {
      x.peers = { restate: [one, one] };
    });
    expect(verdict(r, "ahead of Restate: one at a time, p50")).toMatchObject({
      met: false,
      measured: expect.stringContaining("(level with them)"),
    });
    // This Restate run measured no 32-client loop.
    expect(verdict(r, "ahead of Restate: 32 clients, runs/s")).toMatchObject({
      met: null,
      measured: "750.0 against n/a, n/a (n/a)",
    });
  });

  it("with the Restate run after Spool's failed, the one before is compared and the failure said", () => {
    const before = readRestateResults(restateResults([6.5, 10, 14], [[8, 500]]));
    const r = run((x) => {
      x.peers = { restate: [before], failed: "the run after Spool's failed: restate-bench.cjs ended with 1" };
    });
    expect(verdict(r, "ahead of Restate: 8 clients, runs/s")).toMatchObject({
      met: true,
      measured: "540.0 against 500.0 (ahead of it)",
    });
    const none = run((x) => {
      x.peers = { restate: [], failed: "the run after Spool's failed: boom" };
    });
    expect(verdict(none, "ahead of Restate")).toMatchObject({
      met: null,
      measured: "not measured: the run after Spool's failed: boom",
    });
  });

  it("reads the peers' results file, and refuses one of another shape", () => {
    const p = readRestateResults(restateResults([6, 10, 14], [[8, 500]]));
    expect(p.server).toBe("restate-server 1.7.12");
    expect(p.serial).toEqual({ n: 500, p50: 6, p95: 10, p99: 14 });
    // 180 % of one core for 500 calls/s: 3.6 ms of machine CPU per call.
    expect(p.loops).toEqual([{ clients: 8, runsPerSec: 500, p50: 10, p99: 30, machineCpuMsPerRun: 3.6 }]);
    expect(() => readRestateResults(JSON.stringify({ results: [] }))).toThrow(/no run/);
    expect(() =>
      readRestateResults(JSON.stringify({ results: [{ sequential: { n: 1, p50: "x", p95: 1, p99: 1 } }] })),
    ).toThrow(/sequential.p50/);
  });
});
