// The scenarios that measure Spool itself, through its REST API, against the processes of system.ts.
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { httpRequest } from "@spool/engine/runner";
import { Redis } from "ioredis";
import pg from "pg";
import {
  cpuMsPerRun,
  cpuPercent,
  cpuSnapshot,
  descendants,
  machineBusySeconds,
  round,
  type Summary,
  sampleRss,
  summarize,
} from "./stats.js";
import type { BenchSystem } from "./system.js";

const WORKFLOW = "bench-3-steps";
const STEP_KEYS = ["one", "two", "three"];
/** Redis channel on which the engine announces every run that reached a terminal status. */
// Every turn-ending transition is announced here; the bench workflows never park, so the one
// announcement of a run is its finish.
const SETTLED_CHANNEL = "spool:settled";
/** The run id of an announcement: its id, then (for a small finished run) a newline and its row. */
const announcedId = (message: string) => message.split("\n", 1)[0]!;

const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface HttpResult<T> {
  status: number;
  body: T;
}

function client(sys: BenchSystem) {
  const headers = {
    authorization: `Bearer ${sys.apiKey}`,
    "x-project-id": sys.projectId,
    "content-type": "application/json",
  };
  // Requests go to the APIs in turn (one API: always the same), over kept-alive connections with
  // http.request, as ../shared/peers-bench calls Restate and DBOS (fetch costs the client ~0.3-0.6
  // ms more per request on this VM, which the shared cores then lack).
  let next = 0;
  return async <T>(
    method: string,
    path: string,
    body?: unknown,
    timeoutMs = 60_000,
  ): Promise<HttpResult<T>> => {
    const apiUrl = sys.apiUrls[next++ % sys.apiUrls.length];
    const res = await httpRequest(new URL(`${apiUrl}/api/v1${path}`), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      timeoutMs,
    });
    return { status: res.status, body: (res.text ? JSON.parse(res.text) : null) as T };
  };
}

interface ExecutionBody {
  execution_id: string;
  status: string;
  /** bench-3-steps: `stepsAt` holds when each step's function ran, on the worker's clock. */
  result?: { stepsAt?: number[] } | null;
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
}
interface StepBody {
  step_key: string;
  started_at: string | null;
  completed_at: string | null;
}

const ms = (iso: string | null | undefined) => (iso ? Date.parse(iso) : Number.NaN);

// -------------------------------------------------------------------------------------------------
// Latency: one run at a time.

export interface LatencyResult {
  warmupRuns: number;
  runs: number;
  completed: number;
  runToCompletedMs: Summary;
  /** Next step's function start − previous step's, on the worker's clock (sub-millisecond). */
  stepGapMs: Summary;
  /** completed_at − created_at of the execution, as stored (server side, ms resolution). */
  serverCreatedToCompletedMs: Summary;
  /** started_at − created_at: queue wait and pickup by the worker. */
  serverCreatedToStartedMs: Summary;
  /** First step's started_at − execution started_at: loading the run and its journal. */
  startedToFirstStepMs: Summary;
  /** Execution completed_at − last step's completed_at: finishing the run (flushes, complete). */
  lastStepToCompletedMs: Summary;
  /** When the client got the ?wait response (wall clock) − the stored completed_at. */
  completedToResponseMs: Summary;
  /** Of the stored timestamps behind the breakdown rows (the step gap is measured in the worker). */
  storedTimestampResolutionMs: number;
  /** Postgres' WAL flushes (fsyncs, pg_stat_io) per measured run; null where Postgres has no pg_stat_io. */
  walFlushesPerRun: number | null;
}

/**
 * Postgres' WAL flushes so far (pg_stat_io, Postgres 16+), or null where it cannot tell. Backends
 * report their counts within about a second of going idle, so a reading taken right after the work
 * waits `settleMs` for them.
 */
async function walFlushes(databaseUrl: string, settleMs = 0): Promise<number | null> {
  if (settleMs > 0) await new Promise((resolve) => setTimeout(resolve, settleMs));
  const client = new pg.Client({ connectionString: databaseUrl });
  try {
    await client.connect();
    const { rows } = await client.query<{ fsyncs: string | null }>(
      "SELECT sum(fsyncs) AS fsyncs FROM pg_stat_io WHERE object = 'wal'",
    );
    return rows[0]?.fsyncs === null || rows[0]?.fsyncs === undefined ? null : Number(rows[0].fsyncs);
  } catch {
    return null;
  } finally {
    await client.end().catch(() => {});
  }
}

export async function latencyScenario(
  sys: BenchSystem,
  o: { runs: number; warmup: number; timeoutMs: number },
): Promise<LatencyResult> {
  const http = client(sys);
  const runOnce = async (i: number) => {
    const t0 = performance.now();
    const res = await http<ExecutionBody>("POST", `/workflows/${WORKFLOW}/run?wait=30`, { input: { i } });
    const elapsed = performance.now() - t0;
    const respondedAt = Date.now();
    if (res.status !== 200 || res.body.status !== "completed") {
      throw new Error(`latency run ${i}: HTTP ${res.status}, status ${res.body?.status}`);
    }
    return { elapsed, respondedAt, execution: res.body };
  };
  for (let i = 0; i < o.warmup; i++) await runOnce(-1 - i);

  const elapsed: number[] = [];
  const executions: ExecutionBody[] = [];
  const responded: number[] = [];
  const flushesBefore = await walFlushes(sys.databaseUrl, 1500);
  const start = performance.now();
  for (let i = 0; i < o.runs && performance.now() - start < o.timeoutMs; i++) {
    const r = await runOnce(i);
    elapsed.push(r.elapsed);
    executions.push(r.execution);
    responded.push(r.respondedAt - ms(r.execution.completed_at));
  }
  const flushesAfter = await walFlushes(sys.databaseUrl, 1500);
  // The worker's own step-to-step gaps, from the run's result (no-op steps: start ≈ end).
  const gaps: number[] = [];
  for (const e of executions) {
    const at = e.result?.stepsAt ?? [];
    for (let k = 1; k < at.length; k++) gaps.push((at[k] ?? Number.NaN) - (at[k - 1] ?? Number.NaN));
  }
  // Read the stored step timestamps afterwards, so that reading them does not slow the runs.
  const toFirst: number[] = [];
  const fromLast: number[] = [];
  for (const e of executions) {
    const { body } = await http<{ steps: StepBody[] }>("GET", `/executions/${e.execution_id}/steps`);
    const byKey = new Map(body.steps.map((s) => [s.step_key, s]));
    toFirst.push(ms(byKey.get(STEP_KEYS[0] ?? "")?.started_at) - ms(e.started_at));
    fromLast.push(ms(e.completed_at) - ms(byKey.get(STEP_KEYS.at(-1) ?? "")?.completed_at));
  }
  return {
    warmupRuns: o.warmup,
    runs: elapsed.length,
    completed: executions.length,
    runToCompletedMs: summarize(elapsed),
    stepGapMs: summarize(gaps),
    serverCreatedToCompletedMs: summarize(executions.map((e) => ms(e.completed_at) - ms(e.created_at))),
    serverCreatedToStartedMs: summarize(executions.map((e) => ms(e.started_at) - ms(e.created_at))),
    startedToFirstStepMs: summarize(toFirst),
    lastStepToCompletedMs: summarize(fromLast),
    completedToResponseMs: summarize(responded),
    storedTimestampResolutionMs: 1,
    walFlushesPerRun:
      flushesBefore === null || flushesAfter === null || elapsed.length === 0
        ? null
        : (flushesAfter - flushesBefore) / elapsed.length,
  };
}

// -------------------------------------------------------------------------------------------------
// Throughput: open-loop arrivals at fixed rates.

export interface RateResult {
  offeredPerSec: number;
  windowMs: number;
  scheduled: number;
  sent: number;
  accepted: number;
  httpErrors: number;
  completed: number;
  notCompleted: number;
  aborted: string | null;
  completedRunsPerSec: number | null;
  stepsPerSec: number | null;
  endToEndMs: Summary;
  acceptMs: Summary;
  sendLagMs: Summary;
  drainMs: number;
  /** CPU use from the first arrival to the end of the drain, in percent of one core. */
  cpuPercent: Record<string, number | null>;
  /** CPU milliseconds per completed run, per process group (insensitive to other load on the machine). */
  cpuMsPerRun: Record<string, number | null>;
}

export interface ThroughputResult {
  rates: RateResult[];
  skipped: { offeredPerSec: number; reason: string }[];
  maxRateWithP99Under500ms: number | null;
  memory: {
    peakRssMiB: Record<string, number | null>;
    vmHwmMiB: Record<string, number | null>;
    samples: number;
    intervalMs: number;
  };
}

export async function throughputScenario(
  sys: BenchSystem,
  o: { rates: readonly number[]; windowMs: number; drainTimeoutMs: number; pauseMs: number },
  procMem: (pid: number) => number | null,
): Promise<ThroughputResult> {
  const http = client(sys);
  const db = new pg.Pool({ connectionString: sys.databaseUrl, max: 2 });
  db.on("error", () => {}); // an idle client dropped at shutdown is not an error here
  const sub = new Redis(sys.redisUrl, { maxRetriesPerRequest: null });
  sub.on("error", () => {});
  // Finish announcements, to know the backlog while sending without polling the API.
  const finishedAt = new Map<string, number>();
  sub.on("message", (_c: string, m: string) => finishedAt.set(announcedId(m), performance.now()));
  await sub.subscribe(SETTLED_CHANNEL);

  const pids: Record<string, number> = {};
  sys.apis.forEach((a, i) => {
    pids[`api${sys.apis.length > 1 ? `-${i + 1}` : ""}`] = a.pid;
  });
  sys.workers.forEach((w, i) => {
    pids[`worker${sys.workers.length > 1 ? `-${i + 1}` : ""}`] = w.pid;
  });
  const sampler = sampleRss(pids);
  const rates: RateResult[] = [];
  const skipped: ThroughputResult["skipped"] = [];
  try {
    for (const rate of o.rates) {
      const previous = rates.at(-1);
      if (previous?.aborted || (previous && previous.notCompleted > 0)) {
        skipped.push({
          offeredPerSec: rate,
          reason: `not run: ${previous.offeredPerSec}/s already ${previous.aborted ? "overloaded the system" : "left runs unfinished"}`,
        });
        continue;
      }
      log(`throughput: ${rate} runs/s for ${o.windowMs} ms`);
      rates.push(await oneRate(rate));
      await sleep(o.pauseMs);
    }
  } finally {
    await sub.quit().catch(() => {});
  }
  const mem = sampler.stop();
  await db.end();
  const vmHwmMiB = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, procMem(pid)]));
  const ok = rates.filter((r) => !r.aborted && r.notCompleted === 0 && r.endToEndMs.p99 !== null);
  const under = ok.filter((r) => (r.endToEndMs.p99 ?? Number.POSITIVE_INFINITY) < 500);
  return {
    rates,
    skipped,
    maxRateWithP99Under500ms: under.length ? Math.max(...under.map((r) => r.offeredPerSec)) : null,
    memory: { ...mem, vmHwmMiB },
  };

  async function oneRate(rate: number): Promise<RateResult> {
    const scheduled = Math.max(1, Math.round((rate * o.windowMs) / 1000));
    const interval = 1000 / rate;
    const backlogLimit = Math.max(50, rate * 2); // more than 2 s of arrivals behind
    const sends: { scheduled: number; sent: number; id?: string; acceptMs?: number }[] = [];
    let httpErrors = 0;
    let outstanding = 0;
    let aborted: string | null = null;
    const pending = new Set<Promise<void>>();
    const ours = new Set<string>();
    // perf_hooks time ↔ wall clock (sampled now), for comparing with Postgres timestamps.
    const wallOffset = Date.now() - performance.now();
    const wallAt = (t: number) => wallOffset + t;

    const send = (k: number, at: number) => {
      const entry: (typeof sends)[number] = { scheduled: at, sent: performance.now() };
      sends.push(entry);
      outstanding++;
      const p = http<ExecutionBody>("POST", `/workflows/${WORKFLOW}/run`, { input: { i: k } }, 30_000)
        .then((res) => {
          if (res.status !== 202) throw new Error(`HTTP ${res.status}`);
          entry.id = res.body.execution_id;
          entry.acceptMs = performance.now() - entry.sent;
          ours.add(entry.id);
          if (finishedAt.has(entry.id)) outstanding--;
        })
        .catch(() => {
          httpErrors++;
          outstanding--;
        })
        .finally(() => pending.delete(p));
      pending.add(p);
    };
    const onFinish = (_c: string, m: string) => {
      if (ours.has(announcedId(m))) outstanding--;
    };
    sub.on("message", onFinish);

    const cpuGroups = cpuGroupsOf(sys);
    const cpuBefore = cpuSnapshot(cpuGroups);
    const machineBefore = machineBusySeconds();
    const t0 = performance.now() + 20;
    let k = 0;
    try {
      while (k < scheduled) {
        const now = performance.now();
        if (now - t0 > o.windowMs + 1000) {
          aborted = `the client could not send on time (${k} of ${scheduled} sent)`;
          break;
        }
        while (k < scheduled && t0 + k * interval <= now) {
          send(k, t0 + k * interval);
          k++;
        }
        if (outstanding > backlogLimit) {
          aborted = `backlog of ${outstanding} runs (> ${backlogLimit}, i.e. > 2 s of arrivals) after ${Math.round(now - t0)} ms; stopped sending`;
          break;
        }
        const nextAt = t0 + k * interval;
        await sleep(Math.max(0, Math.min(5, nextAt - performance.now())));
      }
      // Drain: every accepted run finishes, or the bound runs out.
      const drainStart = performance.now();
      while (performance.now() - drainStart < o.drainTimeoutMs) {
        if (pending.size === 0 && outstanding <= 0) break;
        await sleep(20);
      }
      const drainMs = performance.now() - drainStart;
      const wall = performance.now() - t0;
      const cpuAfter = cpuSnapshot(cpuGroups);
      const cpu = cpuPercent(cpuBefore, cpuAfter, wall);
      const machineAfter = machineBusySeconds();
      const machine =
        machineBefore === null || machineAfter === null
          ? null
          : round(((machineAfter - machineBefore) / (wall / 1000)) * 100, 0);
      const ours = Object.values(cpu).reduce<number>((s, x) => s + (x ?? 0), 0);
      cpu["whole machine"] = machine;
      cpu["other processes (not this benchmark's)"] = machine === null ? null : Math.max(0, machine - ours);
      await Promise.race([Promise.allSettled([...pending]), sleep(5_000)]);

      // The stored timestamps of every accepted run, read after the window (no load during it).
      const accepted = sends.filter((s) => s.id !== undefined);
      const ids = accepted.map((s) => s.id as string);
      const { rows } = await db.query<{ id: string; status: string; completed_at: Date | null }>(
        "SELECT id, status, completed_at FROM executions WHERE id = ANY($1::uuid[])",
        [ids],
      );
      const byId = new Map(rows.map((r) => [r.id, r]));
      const e2e: number[] = [];
      let lastCompleted = 0;
      for (const s of accepted) {
        const row = byId.get(s.id as string);
        if (row?.status !== "completed" || !row.completed_at) continue;
        const done = row.completed_at.getTime();
        lastCompleted = Math.max(lastCompleted, done);
        // From the scheduled arrival (not the actual send), so a slow client cannot hide delay.
        e2e.push(done - wallAt(s.scheduled));
      }
      const steps = await db.query<{ n: string }>(
        "SELECT count(*) AS n FROM step_results WHERE execution_id = ANY($1::uuid[]) AND status = 'completed'",
        [ids],
      );
      const spanSec = e2e.length ? (lastCompleted - wallAt(t0)) / 1000 : 0;
      return {
        offeredPerSec: rate,
        windowMs: o.windowMs,
        scheduled,
        sent: sends.length,
        accepted: accepted.length,
        httpErrors,
        completed: e2e.length,
        notCompleted: accepted.length - e2e.length,
        aborted,
        completedRunsPerSec: spanSec > 0 ? round(e2e.length / spanSec, 1) : null,
        stepsPerSec: spanSec > 0 ? round(Number(steps.rows[0]?.n ?? 0) / spanSec, 1) : null,
        endToEndMs: summarize(e2e),
        acceptMs: summarize(accepted.map((s) => s.acceptMs ?? Number.NaN)),
        sendLagMs: summarize(sends.map((s) => s.sent - s.scheduled)),
        drainMs: round(drainMs, 0) ?? 0,
        cpuPercent: cpu,
        cpuMsPerRun: cpuMsPerRun(cpuBefore, cpuAfter, e2e.length, 1),
      };
    } finally {
      sub.off("message", onFinish);
    }
  }
}

/** Process groups whose CPU time the throughput scenario reports. */
function cpuGroupsOf(sys: BenchSystem): Record<string, () => number[]> {
  const services = (comm: string) => () =>
    sys.servicesPid === null
      ? []
      : descendants(sys.servicesPid)
          .filter((p) => p.comm.startsWith(comm))
          .map((p) => p.pid);
  return {
    api: () => sys.apis.map((a) => a.pid),
    workers: () => sys.workers.map((w) => w.pid),
    scheduler: () => [sys.scheduler.pid],
    postgres: services("postgres"),
    redis: services("redis-server"),
    "bench client": () => [process.pid],
  };
}

/**
 * A closed loop: `clients` clients, each sending its next run (`run`, true when it completed) as soon
 * as its last one answered, until `until` (performance.now()). The start and end of every completed
 * run, and how many did not complete.
 */
async function closedLoopRuns(
  clients: number,
  until: number,
  run: (i: number) => Promise<boolean>,
): Promise<{ answered: [number, number][]; failed: number }> {
  const answered: [number, number][] = [];
  let failed = 0;
  let seq = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < until) {
        const t0 = performance.now();
        if (await run(seq++)) answered.push([t0, performance.now()]);
        else failed++;
      }
    }),
  );
  return { answered, failed };
}

// -------------------------------------------------------------------------------------------------
// Closed loop as ../shared/peers-bench measures the peers: N clients, each sending its next run as
// soon as the last one answered, a ramp-up not counted, then a measured window.

export interface PeerLoadPoint {
  clients: number;
  windowMs: number;
  /** Runs whose answer came inside the measured window. */
  completed: number;
  failed: number;
  runsPerSec: number | null;
  /** Client-observed, of the runs answered inside the window. */
  runMs: Summary;
  /** CPU use over the measured window, in percent of one core, per process group and the machine. */
  cpuPercent: Record<string, number | null>;
  /** The whole machine's busy CPU milliseconds per run answered in the window. */
  machineCpuMsPerRun: number | null;
}

export async function peerLoadScenario(
  sys: BenchSystem,
  o: { clients: readonly number[]; windowMs: number; rampupMs: number },
): Promise<PeerLoadPoint[]> {
  const http = client(sys);
  const cpuGroups = cpuGroupsOf(sys);
  const points: PeerLoadPoint[] = [];
  for (const clients of o.clients) {
    log(`closed loop: ${clients} clients, ${o.rampupMs / 1000} s ramp-up, ${o.windowMs / 1000} s measured`);
    const start = performance.now();
    const windowStart = start + o.rampupMs;
    const windowEnd = windowStart + o.windowMs;
    let cpuBefore: Record<string, number | null> = {};
    let machineBefore: number | null = null;
    let cpuAt = 0;
    const sampling = sleep(o.rampupMs).then(() => {
      cpuAt = performance.now();
      cpuBefore = cpuSnapshot(cpuGroups);
      machineBefore = machineBusySeconds();
    });
    const ended = sleep(o.rampupMs + o.windowMs).then(() => ({
      cpu: cpuSnapshot(cpuGroups),
      machine: machineBusySeconds(),
      at: performance.now(),
    }));
    const { answered, failed } = await closedLoopRuns(clients, windowEnd, async (i) => {
      const res = await http<ExecutionBody>("POST", `/workflows/${WORKFLOW}/run?wait=30`, {
        input: { i },
      }).catch(() => null);
      return res?.status === 200 && res.body.status === "completed";
    });
    await sampling;
    const after = await ended;
    const wallMs = after.at - cpuAt;
    const inWindow = answered.filter(([, end]) => end >= windowStart && end <= windowEnd);
    const cpu = cpuPercent(cpuBefore, after.cpu, wallMs);
    const machineBusy =
      machineBefore === null || after.machine === null ? null : after.machine - machineBefore;
    cpu["whole machine"] = machineBusy === null ? null : round((machineBusy / (wallMs / 1000)) * 100, 0);
    points.push({
      clients,
      windowMs: o.windowMs,
      completed: inWindow.length,
      failed,
      runsPerSec: round((inWindow.length / o.windowMs) * 1000, 1),
      runMs: summarize(inWindow.map(([t0, end]) => end - t0)),
      cpuPercent: cpu,
      machineCpuMsPerRun:
        machineBusy === null || inWindow.length === 0
          ? null
          : round((machineBusy * 1000) / inWindow.length, 2),
    });
    await sleep(1000);
  }
  return points;
}

// -------------------------------------------------------------------------------------------------
// Events: publish into a batch trigger (batch_size 100).

export interface EventsResult {
  batchSize: number;
  publishers: number;
  published: number;
  publishErrors: number;
  publishPerSec: number | null;
  publishMs: Summary;
  batchesExpected: number;
  batchesFired: number;
  /** Batch execution started_at − created_at of its 100th (highest-sequence) event. */
  lastEventToRunStartedMs: Summary;
  /** Batch execution created_at − created_at of its 100th event (the firing alone). */
  lastEventToRunCreatedMs: Summary;
}

export async function eventsScenario(
  sys: BenchSystem,
  o: { batches: number; publishers: number; timeoutMs: number },
): Promise<EventsResult> {
  const http = client(sys);
  const batchSize = 100;
  const topic = `bench-${randomUUID()}`;
  const reg = await http<{ trigger: { id: string } }>("POST", "/event-triggers/register", {
    workflow_id: "bench-batch",
    deployment_id: sys.deploymentId,
    event_topic: topic,
    batch_size: batchSize,
  });
  if (reg.status >= 300)
    throw new Error(`registering the trigger: HTTP ${reg.status} ${JSON.stringify(reg.body)}`);
  const triggerId = reg.body.trigger.id;

  const total = o.batches * batchSize;
  let next = 0;
  let errors = 0;
  const lat: number[] = [];
  const start = performance.now();
  await Promise.all(
    Array.from({ length: o.publishers }, async () => {
      while (next < total && performance.now() - start < o.timeoutMs) {
        const n = next++;
        const t0 = performance.now();
        const res = await http("POST", "/events/publish", { topic, data: { n } }).catch(() => null);
        if (res?.status !== 201) errors++;
        else lat.push(performance.now() - t0);
      }
    }),
  );
  const elapsed = performance.now() - start;

  // Wait (bounded) for the batches' runs to start, reading the executions from Postgres.
  const db = new pg.Pool({ connectionString: sys.databaseUrl, max: 1 });
  db.on("error", () => {}); // an idle client dropped at shutdown is not an error here
  type Row = {
    input: { events: { sequence_id: number; created_at: string }[] };
    created_at: Date;
    started_at: Date | null;
  };
  let rows: Row[] = [];
  const expected = Math.floor(lat.length / batchSize);
  const deadline = Date.now() + 30_000;
  try {
    for (;;) {
      ({ rows } = await db.query<Row>(
        `SELECT input, created_at, started_at FROM executions
          WHERE project_id = $1 AND workflow_id = 'bench-batch' AND input->>'trigger_id' = $2`,
        [sys.projectId, triggerId],
      ));
      if ((rows.length >= expected && rows.every((r) => r.started_at)) || Date.now() > deadline) break;
      await sleep(200);
    }
  } finally {
    await db.end();
  }
  const lastOf = (r: Row) =>
    r.input.events.reduce((a, b) => (b.sequence_id > a.sequence_id ? b : a), r.input.events[0]!);
  const full = rows.filter((r) => r.input.events.length === batchSize);
  return {
    batchSize,
    publishers: o.publishers,
    published: lat.length,
    publishErrors: errors,
    publishPerSec: lat.length ? round((lat.length / elapsed) * 1000, 1) : null,
    publishMs: summarize(lat),
    batchesExpected: expected,
    batchesFired: full.length,
    lastEventToRunStartedMs: summarize(
      full.map((r) => (r.started_at ? r.started_at.getTime() : Number.NaN) - ms(lastOf(r).created_at)),
    ),
    lastEventToRunCreatedMs: summarize(full.map((r) => r.created_at.getTime() - ms(lastOf(r).created_at))),
  };
}

// -------------------------------------------------------------------------------------------------
// The remote push path: the same 3-step run through a remote worker (createWorker over the worker
// protocol) beside the in-cluster worker, in the same sitting.

export interface ClosedLoopResult {
  concurrency: number;
  windowMs: number;
  completed: number;
  failed: number;
  runsPerSec: number | null;
  endToEndMs: Summary;
  /** CPU milliseconds per completed run, per process group (the remote worker's among them). */
  cpuMsPerRun: Record<string, number | null>;
}

export interface PushResult {
  warmupRuns: number;
  /** One run at a time through the remote worker (POST …/run?wait=30 until its response). */
  serialMs: Summary;
  /**
   * One run at a time through the in-cluster worker, each right before one of serialMs': the
   * remote path's ratio is of figures taken under the same conditions (the machine is shared, and
   * the bench's load phases leave Postgres and the caches in another state than at its start).
   */
  inClusterSerialMs: Summary;
  /**
   * `concurrency` clients each starting the next run as soon as theirs finished, for `windowMs` per
   * path, in two halves per path taken in turns: remote, in-cluster, in-cluster, remote.
   */
  closedLoop: { remote: ClosedLoopResult; inCluster: ClosedLoopResult };
}

const REMOTE_WORKFLOW = "bench-3-steps-remote";

type Path = "remote" | "inCluster";

/** One window of a closed loop: the CPU snapshots around it, and what it measured. */
interface LoopWindow {
  cpuBefore: Record<string, number | null>;
  cpuAfter: Record<string, number | null>;
  latencies: number[];
  failed: number;
  elapsedMs: number;
}

/** CPU milliseconds per run over several windows, per group (null where a window's is unknown). */
function cpuMsPerRunOver(windows: LoopWindow[], runs: number, digits: number): Record<string, number | null> {
  const before: Record<string, number | null> = {};
  const after: Record<string, number | null> = {};
  for (const w of windows) {
    for (const k of Object.keys(w.cpuAfter)) {
      const a = w.cpuAfter[k];
      const b = w.cpuBefore[k];
      const known = a != null && b != null && before[k] !== null;
      before[k] = known ? 0 : null;
      after[k] = known ? (after[k] ?? 0) + (a - b) : null;
    }
  }
  return cpuMsPerRun(before, after, runs, digits);
}

export async function pushScenario(
  sys: BenchSystem,
  o: { runs: number; warmup: number; concurrency: number; windowMs: number },
): Promise<PushResult> {
  const http = client(sys);
  const runOnce = async (workflow: string, i: number) => {
    const t0 = performance.now();
    const res = await http<ExecutionBody>("POST", `/workflows/${workflow}/run?wait=30`, { input: { i } });
    if (res.status !== 200 || res.body.status !== "completed") {
      throw new Error(`${workflow} run ${i}: HTTP ${res.status}, status ${res.body?.status}`);
    }
    return performance.now() - t0;
  };
  for (let i = 0; i < o.warmup; i++) await runOnce(REMOTE_WORKFLOW, -1 - i);
  // In turns, an in-cluster run then a remote one: whatever the machine does meanwhile (other
  // tenants, autovacuum after the load phases) falls on both paths alike.
  const serial: number[] = [];
  const inClusterSerial: number[] = [];
  for (let i = 0; i < o.runs; i++) {
    inClusterSerial.push(await runOnce(WORKFLOW, i));
    serial.push(await runOnce(REMOTE_WORKFLOW, i));
  }

  const cpuGroups = { ...cpuGroupsOf(sys), "remote worker": () => [sys.remote.pid] };
  const windows: Record<Path, LoopWindow[]> = { remote: [], inCluster: [] };
  // Each path's window in two halves, in turns (remote, in-cluster, in-cluster, remote): a host that
  // grows busier or quieter over the loops (other tenants, autovacuum) weighs on both paths alike,
  // as it does on the runs one at a time above, taken in turns too.
  const order: Path[] = ["remote", "inCluster", "inCluster", "remote"];
  log(
    `push path: closed loops of ${o.concurrency} clients, ${o.windowMs / 2000} s each: remote, in-cluster, in-cluster, remote`,
  );
  for (const [i, path] of order.entries()) {
    if (i > 0) await sleep(1000);
    const start = performance.now();
    const cpuBefore = cpuSnapshot(cpuGroups);
    const { answered, failed } = await closedLoopRuns(o.concurrency, start + o.windowMs / 2, (n) =>
      runOnce(path === "remote" ? REMOTE_WORKFLOW : WORKFLOW, n).then(
        () => true,
        () => false,
      ),
    );
    windows[path].push({
      cpuBefore,
      cpuAfter: cpuSnapshot(cpuGroups),
      latencies: answered.map(([t0, end]) => end - t0),
      failed,
      elapsedMs: performance.now() - start,
    });
  }
  const closedLoop = (path: Path): ClosedLoopResult => {
    const parts = windows[path];
    const lat = parts.flatMap((w) => w.latencies);
    const elapsed = parts.reduce((s, w) => s + w.elapsedMs, 0);
    return {
      cpuMsPerRun: cpuMsPerRunOver(parts, lat.length, 2),
      concurrency: o.concurrency,
      windowMs: o.windowMs,
      completed: lat.length,
      failed: parts.reduce((s, w) => s + w.failed, 0),
      runsPerSec: lat.length ? round((lat.length / elapsed) * 1000, 1) : null,
      endToEndMs: summarize(lat),
    };
  };
  const remote = closedLoop("remote");
  const inCluster = closedLoop("inCluster");
  return {
    warmupRuns: o.warmup,
    serialMs: summarize(serial),
    inClusterSerialMs: summarize(inClusterSerial),
    closedLoop: { remote, inCluster },
  };
}
