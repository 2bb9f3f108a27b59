// Restate beside Spool in one sitting: `npm run bench -- --restate <peers-bench dir>` runs that
// folder's restate-bench.cjs (../shared/peers-bench on the dev VM) once before Spool's system starts
// and once after it stops, never alongside it (they would share the cores), so every Spool figure has
// a Restate run on either side, measured the same way (its README says how).
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

/** One Restate run, reduced to the figures Spool's report sets beside its own. */
export interface PeerRun {
  /** e.g. "restate-server 1.7.12". */
  server: string;
  startedAt: string;
  /** Sequential calls, client-observed (ms). */
  serial: { n: number; p50: number; p95: number; p99: number };
  /** Closed loops of N clients: calls answered per second, their latency, the machine's CPU per call. */
  loops: {
    clients: number;
    runsPerSec: number;
    p50: number;
    p99: number;
    machineCpuMsPerRun: number | null;
  }[];
}

export interface PeerPlan {
  /** Sequential calls measured, and warm-up calls before them. */
  seq: number;
  warmup: number;
  clients: readonly number[];
  durationSec: number;
  rampupSec: number;
}

const SCRIPT = "restate-bench.cjs";

/** Throws unless `dir` holds the peers' Restate script with its packages installed. */
export function checkPeersDir(dir: string): string {
  const abs = resolve(dir);
  if (!existsSync(join(abs, SCRIPT)))
    throw new Error(`--restate: ${abs} has no ${SCRIPT} (point it at ../shared/peers-bench)`);
  if (!existsSync(join(abs, "node_modules", "@restatedev")))
    throw new Error(`--restate: run "npm install" in ${abs} first (its README says how)`);
  return abs;
}

/** Runs the peers' Restate benchmark once (one run, the service variant) and reads its results. */
export async function runRestate(dir: string, plan: PeerPlan, log: (m: string) => void): Promise<PeerRun> {
  const args = [
    join(dir, SCRIPT),
    ...["--runs", "1", "--variants", "service"],
    ...["--seq", String(plan.seq), "--warmup", String(plan.warmup)],
    ...["--conc", plan.clients.join(","), "--duration", String(plan.durationSec)],
    ...["--rampup", String(plan.rampupSec)],
  ];
  log(`restate: node ${args.map((a) => a.replace(`${dir}/`, "")).join(" ")} (in ${dir})`);
  const child = spawn(process.execPath, args, { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
  let tail = "";
  let resultsFile: string | null = null;
  // Whole lines only: a chunk may end inside one (the results line among them).
  const lines = () => {
    let partial = "";
    const onLine = (line: string) => {
      if (!line.trim()) return;
      log(`restate: ${line}`);
      const m = /results: (\S+\.json)\s*$/.exec(line);
      if (m?.[1]) resultsFile = resolve(dir, m[1]);
    };
    return {
      data: (chunk: Buffer) => {
        const text = partial + chunk.toString();
        tail = (tail + chunk.toString()).slice(-4000);
        const parts = text.split("\n");
        partial = parts.pop() ?? "";
        for (const line of parts) onLine(line);
      },
      end: () => onLine(partial),
    };
  };
  for (const stream of [child.stdout, child.stderr]) {
    const l = lines();
    stream.on("data", l.data);
    stream.on("end", l.end);
  }
  // 'close', not 'exit': its output may still be unread when it exits.
  const code = await new Promise<number | string | null>((done) => {
    child.once("error", (err) => done(err.message));
    child.once("close", (c) => done(c));
  });
  if (code !== 0 || resultsFile === null)
    throw new Error(
      `${SCRIPT} ended with ${code}${resultsFile ? "" : " and named no results file"}\n${tail}`,
    );
  return readRestateResults(readFileSync(resultsFile, "utf8"));
}

/** The figures of a restate-bench.cjs results file (its first run); throws on any other shape. */
export function readRestateResults(json: string): PeerRun {
  const data = JSON.parse(json) as {
    meta?: { restateServer?: string; startedAt?: string };
    results?: {
      sequential?: { n?: number; p50?: number; p95?: number; p99?: number };
      throughput?: {
        concurrency?: number;
        perSec?: number;
        p50?: number;
        p99?: number;
        cpu?: { machine?: number };
      }[];
    }[];
  };
  const run = data.results?.[0];
  const seq = run?.sequential;
  const num = (x: unknown, what: string): number => {
    if (typeof x !== "number" || !Number.isFinite(x))
      throw new Error(`Restate results: ${what} is not a number`);
    return x;
  };
  if (!run || !seq) throw new Error("Restate results: no run with sequential figures");
  return {
    server: data.meta?.restateServer ?? "restate-server",
    startedAt: data.meta?.startedAt ?? "",
    serial: {
      n: num(seq.n, "sequential.n"),
      p50: num(seq.p50, "sequential.p50"),
      p95: num(seq.p95, "sequential.p95"),
      p99: num(seq.p99, "sequential.p99"),
    },
    loops: (run.throughput ?? []).map((t) => {
      const runsPerSec = num(t.perSec, "throughput.perSec");
      const machine = t.cpu?.machine;
      return {
        clients: num(t.concurrency, "throughput.concurrency"),
        runsPerSec,
        p50: num(t.p50, "throughput.p50"),
        p99: num(t.p99, "throughput.p99"),
        // Its machine CPU in % of one core over the window, per call answered: as Spool's closed loop.
        machineCpuMsPerRun:
          typeof machine === "number" && runsPerSec > 0
            ? Math.round((machine * 1000) / runsPerSec) / 100
            : null,
      };
    }),
  };
}

/**
 * Where a Spool figure stands among the same figure of the Restate runs of the sitting: better than
 * every one (ahead), worse than every one (behind), equal to every one (level), or else between.
 */
export type Standing = "ahead" | "between" | "level" | "behind";

/** `better`: whether a higher (runs/s) or a lower (latency, CPU) figure is the better one. */
export function standing(ours: number, peers: number[], better: "higher" | "lower"): Standing | null {
  if (peers.length === 0 || !Number.isFinite(ours)) return null;
  const beats = (p: number) => (better === "higher" ? ours > p : ours < p);
  const loses = (p: number) => (better === "higher" ? ours < p : ours > p);
  if (peers.every(beats)) return "ahead";
  if (peers.every(loses)) return "behind";
  if (peers.every((p) => p === ours)) return "level";
  return "between";
}
