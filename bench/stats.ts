// Small measurement helpers: percentiles and /proc memory sampling.
import { readdirSync, readFileSync } from "node:fs";

export interface Summary {
  n: number;
  min: number | null;
  p50: number | null;
  p95: number | null;
  p99: number | null;
  max: number | null;
  mean: number | null;
}

/** Nearest-rank percentile (p in 0..100) of an ascending array. */
function rank(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] ?? null;
}

const round = (x: number | null, digits = 2) =>
  x === null ? null : Math.round(x * 10 ** digits) / 10 ** digits;

export function summarize(values: number[]): Summary {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  const mean = sorted.length ? sorted.reduce((s, v) => s + v, 0) / sorted.length : null;
  return {
    n: sorted.length,
    min: round(sorted[0] ?? null),
    p50: round(rank(sorted, 50)),
    p95: round(rank(sorted, 95)),
    p99: round(rank(sorted, 99)),
    max: round(sorted.at(-1) ?? null),
    mean: round(mean),
  };
}

export { round };

/** A figure as the reports print it: `digits` decimals, or "n/a" when there is none. */
export const fixed = (x: number | null | undefined, digits = 1) =>
  x === null || x === undefined || !Number.isFinite(x) ? "n/a" : x.toFixed(digits);

/** A `Vm*` field of /proc/<pid>/status in MiB, or null when unreadable (process gone, not Linux). */
export function procMemMiB(pid: number, field: "VmRSS" | "VmHWM"): number | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status);
    return m?.[1] ? Math.round((Number(m[1]) / 1024) * 10) / 10 : null;
  } catch {
    return null;
  }
}

/** Samples VmRSS of some processes every `intervalMs` until stopped; keeps the maximum of each. */
export function sampleRss(pids: Record<string, number>, intervalMs = 200) {
  const peak: Record<string, number | null> = Object.fromEntries(Object.keys(pids).map((k) => [k, null]));
  let samples = 0;
  const tick = () => {
    samples++;
    for (const [name, pid] of Object.entries(pids)) {
      const rss = procMemMiB(pid, "VmRSS");
      if (rss !== null && (peak[name] === null || rss > (peak[name] ?? 0))) peak[name] = rss;
    }
  };
  tick();
  const timer = setInterval(tick, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      tick();
      return { peakRssMiB: peak, samples, intervalMs };
    },
  };
}

const CLK_TCK = 100; // USER_HZ on Linux

/**
 * CPU seconds of a process and of its children that have exited (null when gone or unreadable).
 * The children count because Postgres forks a backend per connection: one that exits (a pool
 * closing an idle connection) takes its CPU time out of the sum of live processes, and only its
 * parent's cutime/cstime keeps it. Without them a window in which a backend exited read too little
 * Postgres CPU, down to nothing.
 */
function cpuSecondsOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // After "pid (comm) ": state is field 3, utime, stime, cutime, cstime fields 14 to 17.
    return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / CLK_TCK;
  } catch {
    return null;
  }
}

/** Every process below `root` in the process tree, with its command name. */
export function descendants(root: number): { pid: number; comm: string }[] {
  const children = new Map<number, { pid: number; comm: string }[]>();
  let entries: string[] = [];
  try {
    entries = readdirSync("/proc").filter((e) => /^\d+$/.test(e));
  } catch {
    return [];
  }
  for (const e of entries) {
    try {
      const stat = readFileSync(`/proc/${e}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const list = children.get(ppid) ?? [];
      list.push({ pid: Number(e), comm });
      children.set(ppid, list);
    } catch {
      // gone
    }
  }
  const out: { pid: number; comm: string }[] = [];
  const walk = (p: number) => {
    for (const c of children.get(p) ?? []) {
      out.push(c);
      walk(c.pid);
    }
  };
  walk(root);
  return out;
}

/** CPU seconds used so far by each named group of processes (pids resolved at each call). */
export function cpuSnapshot(groups: Record<string, () => number[]>): Record<string, number | null> {
  const out: Record<string, number | null> = {};
  for (const [name, pids] of Object.entries(groups)) {
    const list = pids();
    if (list.length === 0) {
      out[name] = null;
      continue;
    }
    out[name] = list.reduce((s, pid) => s + (cpuSecondsOf(pid) ?? 0), 0);
  }
  return out;
}

/** What `of` makes of each group's CPU seconds between two snapshots (null where either is unknown). */
function perGroup(
  before: Record<string, number | null>,
  after: Record<string, number | null>,
  of: (cpuSeconds: number) => number | null,
): Record<string, number | null> {
  return Object.fromEntries(
    Object.keys(after).map((k) => {
      const a = after[k];
      const b = before[k];
      return [k, a == null || b == null ? null : of(a - b)];
    }),
  );
}

/** CPU use between two snapshots as percent of one core (200 = two cores busy). */
export function cpuPercent(
  before: Record<string, number | null>,
  after: Record<string, number | null>,
  wallMs: number,
): Record<string, number | null> {
  return perGroup(before, after, (sec) => round((sec / (wallMs / 1000)) * 100, 0));
}

/** CPU milliseconds per run between two snapshots, per group (null also when there was no run). */
export function cpuMsPerRun(
  before: Record<string, number | null>,
  after: Record<string, number | null>,
  runs: number,
  digits: number,
): Record<string, number | null> {
  return perGroup(before, after, (sec) => (runs === 0 ? null : round((sec * 1000) / runs, digits)));
}

/** Busy CPU seconds of the whole machine so far (all cores, every process: ours and others'). */
export function machineBusySeconds(): number | null {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "";
    const v = line.trim().split(/\s+/).slice(1).map(Number);
    const total = v.slice(0, 8).reduce((s, x) => s + x, 0);
    const idle = (v[3] ?? 0) + (v[4] ?? 0);
    return (total - idle) / CLK_TCK;
  } catch {
    return null;
  }
}
