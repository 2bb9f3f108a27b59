// Prometheus metrics after a known workload: the API process counts the runs it started, its
// requests and streams, and reads the queue and worker gauges from Postgres; the worker process
// counts the runs it finished and the steps it ran, on SPOOL_METRICS_PORT.
import { randomBytes } from "node:crypto";
import { createClient } from "@spool/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Proc, type System, startSystem } from "./harness.js";

/** The value of the sample `name{labels…}` whose labels include `labels` (0 when absent). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const got = Object.fromEntries(
      [...line.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!] as const),
    );
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) total += Number(line.split(" ").at(-1));
  }
  return total;
}

describe("GET /metrics (real api and worker processes)", () => {
  let sys: System;
  let api: Proc & { url: string };
  let workerMetrics: string;
  const adminKey = `sk_admin_${randomBytes(24).toString("hex")}`;

  beforeAll(async () => {
    sys = await startSystem({ ownDatabase: true });
    api = await sys.startApiProcess(undefined, { SPOOL_ADMIN_KEY: adminKey });
    const worker = await sys.startWorker({ SPOOL_METRICS_PORT: "0" });
    const { port } = await worker.waitFor((l) => l.msg === "metrics listening");
    workerMetrics = `http://127.0.0.1:${Number(port)}/metrics`;
  });
  afterAll(() => sys?.stop());

  const scrapeApi = async () => {
    const res = await fetch(`${api.url}/metrics`, { headers: { authorization: `Bearer ${adminKey}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/plain");
    return res.text();
  };
  const scrapeWorker = async () => (await fetch(workerMetrics)).text();

  it("include each process's own: CPU, memory and event-loop lag", async () => {
    for (const text of [await scrapeApi(), await scrapeWorker()]) {
      expect(sample(text, "process_cpu_seconds_total")).toBeGreaterThan(0);
      expect(sample(text, "nodejs_heap_size_used_bytes")).toBeGreaterThan(0);
      // Sampled every 100 ms: a process up for seconds has samples, so a mean above zero.
      expect(sample(text, "nodejs_eventloop_lag_mean_seconds")).toBeGreaterThan(0);
    }
  });

  it("is the admin key's only", async () => {
    expect((await fetch(`${api.url}/metrics`)).status).toBe(401);
    const project = await fetch(`${api.url}/metrics`, { headers: { authorization: `Bearer ${sys.apiKey}` } });
    expect(project.status).toBe(403);
    expect(await project.json()).toMatchObject({ error_type: "FORBIDDEN" });
  });

  it("counters and gauges move by what was run", async () => {
    const client = createClient({ baseUrl: api.url, apiKey: sys.apiKey, projectId: sys.projectId });
    const project = sys.projectId;
    const [apiBefore, workerBefore] = [await scrapeApi(), await scrapeWorker()];
    const runs = { workflow: "three-steps", project };

    const ids = [];
    for (let n = 0; n < 4; n++) ids.push((await client.run("three-steps", { n })).execution_id);
    const fatal = (await client.run("fatal", {})).execution_id;
    for (const id of ids) expect((await client.executions.waitForResult(id)).status).toBe("completed");
    expect((await client.executions.waitForResult(fatal, { timeoutMs: 30_000 })).status).toBe("failed");
    // Two runs nobody takes: a workflow registered by hand, with no worker for it.
    await client.request("POST", "/workers/deployments/default/workflows", {
      workflow_id: "nobody-runs-this",
      queue_name: "idle-lane",
    });
    for (let n = 0; n < 2; n++) await client.run("nobody-runs-this", {});

    const [apiAfter, workerAfter] = [await scrapeApi(), await scrapeWorker()];
    const moved = (text: string, before: string, name: string, labels: Record<string, string>) =>
      sample(text, name, labels) - sample(before, name, labels);

    // The API started the runs; the worker finished them and ran their steps.
    expect(moved(apiAfter, apiBefore, "spool_runs_started_total", runs)).toBe(4);
    expect(moved(workerAfter, workerBefore, "spool_runs_completed_total", runs)).toBe(4);
    expect(
      moved(workerAfter, workerBefore, "spool_run_duration_seconds_count", { ...runs, status: "completed" }),
    ).toBe(4);
    // Each run's queue wait once, by the process that started it: the API for a run it started on
    // the worker without a job, the worker for a run it took from its job.
    const wait = "spool_run_queue_wait_seconds_count";
    expect(moved(apiAfter, apiBefore, wait, runs) + moved(workerAfter, workerBefore, wait, runs)).toBe(4);
    expect(moved(workerAfter, workerBefore, "spool_runs_failed_total", { workflow: "fatal", project })).toBe(
      1,
    );
    expect(
      moved(workerAfter, workerBefore, "spool_step_duration_seconds_count", { kind: "run" }),
    ).toBeGreaterThanOrEqual(12);
    // Requests by route, not by concrete path.
    expect(
      moved(apiAfter, apiBefore, "spool_http_request_duration_seconds_count", {
        route: "/api/v1/workflows/:workflow_id/run",
        method: "POST",
        status: "202",
      }),
    ).toBe(7);
    // Gauges read from Postgres at the scrape.
    expect(sample(apiAfter, "spool_queue_runs", { project, queue: "idle-lane", state: "queued" })).toBe(2);
    expect(sample(apiAfter, "spool_queue_concurrency_limit", { project, queue: "limited" })).toBe(2);
    expect(sample(apiAfter, "spool_workers_online", { project, deployment: "default", mode: "queue" })).toBe(
      1,
    );
  });
});
