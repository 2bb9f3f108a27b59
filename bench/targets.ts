// The performance targets Spool holds itself to (docs/benchmarks.md, "Targets"), judged from one
// benchmark run, and how that run stands beside the Restate runs of the same sitting (--restate).
import { type PeerRun, type Standing, standing } from "./peers.js";
import type { BenchResult } from "./report.js";
import { fixed as f } from "./stats.js";

export const TARGETS = {
  /** One run at a time, client-observed (ms). */
  serialP50Ms: 10,
  serialP99Ms: 30,
  /** Sustained open-loop rate (runs/s) whose end-to-end p99 stays under `sustainedP99Ms`. */
  sustainedRunsPerSec: 400,
  sustainedP99Ms: 500,
  /** CPU per run at the sustained rate: api + worker + scheduler, and Postgres (ms). */
  appCpuMsPerRun: 4,
  postgresCpuMsPerRun: 2,
  /** The remote push path within this factor of the in-cluster path. */
  remoteFactor: 2,
} as const;

/** One comparison of a Spool figure with the same figure of each Restate run. */
export interface PeerComparison {
  figure: string;
  better: "higher" | "lower";
  ours: number | null;
  /** The same figure of each Restate run, in their order (null: that run did not measure it). */
  restate: (number | null)[];
  standing: Standing | null;
  /** Counted in "ahead of Restate" (latency and runs/s); the CPU rows only inform. */
  target: boolean;
  /** Decimals the figure is printed with. */
  digits: number;
}

export interface TargetVerdict {
  target: string;
  measured: string;
  /** null: this run did not measure it (see `measured`). */
  met: boolean | null;
}

export function compareWithRestate(r: Pick<BenchResult, "latency" | "closedLoop">, peers: PeerRun[]) {
  const row = (
    figure: string,
    better: "higher" | "lower",
    ours: number | null,
    restate: (number | null | undefined)[],
    target: boolean,
    digits = 1,
  ): PeerComparison => {
    const aligned = restate.map((x) => (typeof x === "number" && Number.isFinite(x) ? x : null));
    const measured = aligned.filter((x): x is number => x !== null);
    return {
      figure,
      better,
      ours,
      restate: aligned,
      standing: ours === null ? null : standing(ours, measured, better),
      target,
      digits,
    };
  };
  const serial = r.latency.runToCompletedMs;
  const rows: PeerComparison[] = [
    row(
      "one at a time, p50 (ms)",
      "lower",
      serial.p50,
      peers.map((p) => p.serial.p50),
      true,
    ),
    row(
      "one at a time, p95 (ms)",
      "lower",
      serial.p95,
      peers.map((p) => p.serial.p95),
      false,
    ),
    row(
      "one at a time, p99 (ms)",
      "lower",
      serial.p99,
      peers.map((p) => p.serial.p99),
      true,
    ),
  ];
  for (const point of r.closedLoop) {
    const theirs = peers.map((p) => p.loops.find((l) => l.clients === point.clients));
    rows.push(
      row(
        `${point.clients} clients, runs/s`,
        "higher",
        point.runsPerSec,
        theirs.map((l) => l?.runsPerSec),
        true,
      ),
      row(
        `${point.clients} clients, machine CPU per run (ms)`,
        "lower",
        point.machineCpuMsPerRun,
        theirs.map((l) => l?.machineCpuMsPerRun),
        false,
        2,
      ),
    );
  }
  return rows;
}

/** Each target, what this run measured for it, and whether it was met. */
export function judgeTargets(r: Omit<BenchResult, "targets">): TargetVerdict[] {
  const T = TARGETS;
  const serial = r.latency.runToCompletedMs;
  const verdicts: TargetVerdict[] = [
    {
      target: `one run at a time, client-observed p50 ≤ ${T.serialP50Ms} ms`,
      measured: `${f(serial.p50)} ms`,
      met: serial.p50 === null ? null : serial.p50 <= T.serialP50Ms,
    },
    {
      target: `one run at a time, client-observed p99 ≤ ${T.serialP99Ms} ms`,
      measured: `${f(serial.p99)} ms`,
      met: serial.p99 === null ? null : serial.p99 <= T.serialP99Ms,
    },
  ];

  // The rate targets are for one api and one worker process.
  const setup = r.setup.workers === 1 && (r.setup.apis ?? 1) === 1;
  const sustained = r.throughput.rates.find((x) => x.offeredPerSec === T.sustainedRunsPerSec);
  // A run that never offered the target rate (custom --rates) cannot tell whether it holds.
  const offered = r.throughput.rates.some((x) => x.offeredPerSec >= T.sustainedRunsPerSec);
  const best = r.throughput.maxRateWithP99Under500ms;
  const notOneEach = `not judged: this run has ${r.setup.apis ?? 1} api(s) and ${r.setup.workers} worker(s)`;
  const noRate = `not measured: no rate of ${T.sustainedRunsPerSec} runs/s or more in this run`;
  verdicts.push({
    target: `≥ ${T.sustainedRunsPerSec} runs/s sustained with end-to-end p99 < ${T.sustainedP99Ms} ms (one api, one worker)`,
    measured: !setup
      ? notOneEach
      : !offered
        ? noRate
        : `${sustained ? `${T.sustainedRunsPerSec} offered: ${f(sustained.completedRunsPerSec)} completed, p99 ${f(sustained.endToEndMs.p99)} ms; ` : ""}highest rate under the bound: ${best === null ? "none" : `${best} runs/s`}`,
    met: !setup || !offered ? null : best !== null && best >= T.sustainedRunsPerSec,
  });
  const cpu = sustained?.cpuMsPerRun;
  const app = cpu ? sumOf([cpu.api, cpu.workers, cpu.scheduler]) : null;
  const postgres = cpu?.postgres ?? null;
  const atRate = `at ${T.sustainedRunsPerSec} runs/s offered`;
  const cpuMeasured = (ms: number | null, what: string) =>
    !setup
      ? notOneEach
      : !sustained
        ? `not measured: no ${T.sustainedRunsPerSec} runs/s rate in this run`
        : ms === null
          ? `not measured: no CPU figure for ${what} at that rate (no run completed, or not a process this run started)`
          : `${f(ms)} ms`;
  verdicts.push(
    {
      target: `CPU per run ${atRate}: api + worker + scheduler ≤ ${T.appCpuMsPerRun} ms`,
      measured: cpuMeasured(app, "the api, worker and scheduler"),
      met: !setup || app === null ? null : app <= T.appCpuMsPerRun,
    },
    {
      target: `CPU per run ${atRate}: Postgres ≤ ${T.postgresCpuMsPerRun} ms`,
      measured: cpuMeasured(postgres, "Postgres"),
      met: !setup || postgres === null ? null : postgres <= T.postgresCpuMsPerRun,
    },
  );

  // Against the in-cluster runs taken in turns with the remote ones, not the latency figure from the
  // bench's start: the two paths under the same conditions.
  const remoteSerial = r.push.serialMs.p50;
  const inClusterSerial = r.push.inClusterSerialMs.p50;
  const serialFactor = remoteSerial !== null && inClusterSerial ? remoteSerial / inClusterSerial : null;
  const loop = r.push.closedLoop;
  const loadFactor =
    loop.remote.runsPerSec && loop.inCluster.runsPerSec
      ? loop.inCluster.runsPerSec / loop.remote.runsPerSec
      : null;
  // No remote run finished in the window while in-cluster ones did: as far from the target as it gets.
  const remoteStalled = !loop.remote.runsPerSec && Boolean(loop.inCluster.runsPerSec);
  verdicts.push(
    {
      target: `remote push path within ${T.remoteFactor}× of in-cluster, one run at a time (p50)`,
      measured: `${f(remoteSerial)} ms against ${f(inClusterSerial)} ms in-cluster, in turns: ${f(serialFactor, 2)}×`,
      met: serialFactor === null ? null : serialFactor <= T.remoteFactor,
    },
    {
      target: `remote push path within ${T.remoteFactor}× of in-cluster under load (runs/s, ${loop.remote.concurrency} clients)`,
      measured: remoteStalled
        ? `no remote run completed in the window, against ${f(loop.inCluster.runsPerSec)} in-cluster runs/s`
        : `${f(loop.remote.runsPerSec)} against ${f(loop.inCluster.runsPerSec)} runs/s: in-cluster ${f(loadFactor, 2)}× the remote path`,
      met: remoteStalled ? false : loadFactor === null ? null : loadFactor <= T.remoteFactor,
    },
  );

  if (!r.peers || r.peers.restate.length === 0) {
    verdicts.push({
      target: "ahead of Restate, measured in the same sitting",
      measured: r.peers?.failed
        ? `not measured: ${r.peers.failed}`
        : "not measured: run with --restate <peers-bench dir>",
      met: null,
    });
  } else {
    const n = r.peers.restate.length;
    const words: Record<Standing, string> = {
      ahead: n === 1 ? "ahead of it" : `ahead of all ${n}`,
      behind: n === 1 ? "behind it" : `behind all ${n}`,
      level: n === 1 ? "level with it" : "level with them",
      between: "between them",
    };
    for (const c of compareWithRestate(r, r.peers.restate).filter((x) => x.target)) {
      verdicts.push({
        target: `ahead of Restate: ${c.figure}`,
        measured: `${f(c.ours)} against ${c.restate.map((x) => f(x)).join(", ")} (${c.standing === null ? "n/a" : words[c.standing]})`,
        met: c.standing === null ? null : c.standing === "ahead",
      });
    }
  }
  return verdicts;
}

function sumOf(xs: (number | null | undefined)[]): number | null {
  if (xs.some((x) => x === null || x === undefined)) return null;
  return (xs as number[]).reduce((s, x) => s + x, 0);
}
