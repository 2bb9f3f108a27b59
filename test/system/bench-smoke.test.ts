// Smoke test of the benchmark runner (bench/run.ts): a tiny run over the test Postgres and Redis must
// finish with exit 0 and write results whose figures came from measurement.
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, inject, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

interface Summary {
  n: number;
  p50: number | null;
  p99: number | null;
}

describe("npm run bench -- --smoke", () => {
  const out = mkdtempSync(join(tmpdir(), "spool-bench-smoke-"));
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it("runs every scenario against the real system and writes measured figures", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "bench/run.ts", "--smoke", "--out", out], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: inject("databaseUrl"), REDIS_URL: inject("redisUrl") },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (c: Buffer) => {
      output += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      output += c.toString();
    });
    const timer = setTimeout(() => child.kill("SIGTERM"), 100_000);
    const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
    clearTimeout(timer);
    expect(code, output.slice(-4000)).toBe(0);

    const files = readdirSync(out).sort();
    expect(files).toHaveLength(2);
    expect(files[0]).toMatch(/^\d{4}-\d{2}-\d{2}\.json$/);
    expect(files[1]).toMatch(/^\d{4}-\d{2}-\d{2}\.md$/);
    const r = JSON.parse(readFileSync(join(out, files[0]!), "utf8"));
    const md = readFileSync(join(out, files[1]!), "utf8");

    const measured = (s: Summary, n: number) => {
      expect(s.n).toBe(n);
      expect(s.p50).toBeGreaterThan(0);
      expect(s.p99).toBeGreaterThanOrEqual(s.p50 as number);
    };
    expect(r.mode).toBe("smoke");
    expect(r.machine.cores).toBeGreaterThan(0);
    expect(r.machine.node).toBe(process.version);

    // Latency: the requested runs all completed; every run has two step gaps (>= 0 at 1 ms resolution).
    expect(r.latency.runs).toBe(r.setup.plan.latency.runs);
    expect(r.latency.completed).toBe(r.latency.runs);
    measured(r.latency.runToCompletedMs, r.latency.runs);
    expect(r.latency.stepGapMs.n).toBe(r.latency.runs * 2);
    expect(r.latency.stepGapMs.min).toBeGreaterThanOrEqual(0);

    // Throughput: what was scheduled was sent and completed, three steps each.
    const [rate] = r.throughput.rates;
    expect(rate.sent).toBe(rate.scheduled);
    expect(rate.completed).toBe(rate.sent);
    expect(rate.aborted).toBeNull();
    measured(rate.endToEndMs, rate.completed);
    expect(rate.completedRunsPerSec).toBeGreaterThan(0);
    expect(rate.stepsPerSec).toBeCloseTo(rate.completedRunsPerSec * 3, 0);
    expect(r.throughput.memory.peakRssMiB.api).toBeGreaterThan(0);
    expect(r.throughput.memory.peakRssMiB.worker).toBeGreaterThan(0);

    // Closed loop as the peers are measured: every run answered, the machine's CPU read.
    const [point] = r.closedLoop;
    expect(point.clients).toBe(r.setup.plan.closedLoop.clients[0]);
    expect(point.failed).toBe(0);
    expect(point.completed).toBeGreaterThan(0);
    measured(point.runMs, point.completed);
    expect(point.runsPerSec).toBeGreaterThan(0);
    expect(point.cpuPercent.api).toBeGreaterThan(0);

    // Events: one full batch of 100 fired and its delay was measured.
    expect(r.events.published).toBe(100);
    expect(r.events.batchesFired).toBe(1);
    expect(r.events.publishPerSec).toBeGreaterThan(0);
    expect(r.events.lastEventToRunStartedMs.n).toBe(1);
    expect(r.events.lastEventToRunStartedMs.p50).toBeGreaterThanOrEqual(0);

    // The remote push path: serial runs through the remote worker, and both closed loops completed runs.
    measured(r.push.serialMs, r.setup.plan.push.runs);
    measured(r.push.inClusterSerialMs, r.setup.plan.push.runs);
    for (const loop of [r.push.closedLoop.remote, r.push.closedLoop.inCluster]) {
      expect(loop.completed).toBeGreaterThan(0);
      expect(loop.failed).toBe(0);
      expect(loop.runsPerSec).toBeGreaterThan(0);
    }
    // Whose CPU each path costs: the remote path's runs go through the API and the remote worker,
    // the in-cluster ones through the worker.
    expect(r.push.closedLoop.remote.cpuMsPerRun.api).toBeGreaterThan(0);
    expect(r.push.closedLoop.remote.cpuMsPerRun["remote worker"]).toBeGreaterThan(0);
    expect(r.push.closedLoop.inCluster.cpuMsPerRun.workers).toBeGreaterThan(0);
    expect(md).toContain("| closed loop: CPU per run, remote worker (ms) |");

    // Floor: measured in the same run.
    measured(r.floor.bullmq.concurrency1.roundTripMs, r.setup.plan.floor.jobs1);
    expect(r.floor.bullmq.concurrencyN.jobs).toBe(r.setup.plan.floor.jobsN);
    measured(r.floor.postgres.sequential.insertCommitMs, r.setup.plan.floor.inserts1);
    expect(r.floor.postgres.concurrent.inserts).toBe(r.setup.plan.floor.insertsN);

    // The targets, judged from this run's own figures (in smoke mode too few to mean anything).
    const p50Target = r.targets.find((t: { target: string }) => t.target.includes("p50 ≤"));
    expect(p50Target.measured).toBe(`${r.latency.runToCompletedMs.p50.toFixed(1)} ms`);
    expect(p50Target.met).toBe(r.latency.runToCompletedMs.p50 <= 10);
    expect(md).toContain("## Against the targets");

    expect(md).toContain("## Latency");
    expect(md).toContain("## Floor");
    expect(md).toContain("## The remote push path");
    expect(md).toContain("## Closed loop, as ../shared/peers-bench measures the peers");
  }, 120_000);
});
