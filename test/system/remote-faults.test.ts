// Remote workers under faults, in real processes: a slow answer to a completion, one SIGKILLed
// mid-run, and a queue limit shared by remote and in-cluster workers.
import { mkdtempSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countEffects, effects } from "../fixtures/file-effects.js";
import { eventually, type Proc, type System, startSystem } from "./harness.js";

const REMOTE_WORKFLOWS = fileURLToPath(new URL("../fixtures/remote-workflows.ts", import.meta.url));

describe("remote workers under faults (real processes)", () => {
  let sys: System;
  const effectsFile = join(mkdtempSync(join(tmpdir(), "spool-effects-")), "effects.jsonl");
  const env = { SPOOL_TEST_EFFECTS_FILE: effectsFile };

  beforeAll(async () => {
    // Heartbeats every second: a dead remote worker is written off after 3 s.
    sys = await startSystem({ ownDatabase: true });
    await sys.startScheduler();
  });
  afterAll(() => sys?.stop());

  it("a worker at its max takes the next run while the answer to its last completion is on the way", async () => {
    // Between the worker and the API: the answer to the first completion is held back (for good:
    // the worker is killed at the end).
    let held: (() => void) | null = null;
    const completionHeld = new Promise<void>((resolve) => {
      held = resolve;
    });
    const api = new URL(sys.apiUrl);
    const proxy = http.createServer((req, res) => {
      const upstream = http.request(
        { host: api.hostname, port: api.port, path: req.url, method: req.method, headers: req.headers },
        (answer) => {
          const forward = () => {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
          };
          const hold = held;
          if (hold && req.url?.endsWith("/complete")) {
            held = null;
            hold();
          } else forward();
        },
      );
      upstream.on("error", () => res.destroy());
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    let worker: Proc | undefined;
    try {
      worker = await sys.startRemoteWorker({
        ...env,
        SPOOL_API_URL: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
        SPOOL_WORKER_CONCURRENCY: "1",
      });
      const first = await sys.client.run("r-three-steps", { n: 1 });
      await completionHeld;
      // Spool has stored the completion; the worker does not know yet.
      expect(
        (await sys.client.executions.waitForResult(first.execution_id, { timeoutMs: 10_000 })).status,
      ).toBe("completed");
      const next = await sys.client.run("r-three-steps", { n: 2 });
      const done = await sys.client.executions.waitForResult(next.execution_id, { timeoutMs: 10_000 });
      expect(done).toMatchObject({ status: "completed", result: { a: 3, b: 6 } });
    } finally {
      // Gone before the next test, even after a failure: it must take none of their runs.
      await worker?.kill("SIGKILL");
      proxy.closeAllConnections();
      proxy.close();
    }
  });

  /** Step 2 of r-crashable hangs on its first run: the worker (of these) running it now. */
  async function runningStep2<W extends Proc>(workers: W[], executionId: string): Promise<W> {
    const hung = await eventually(
      async () =>
        effects(effectsFile).find((e) => e.execution_id === executionId && e.label === "step-2-start"),
      20_000,
      "step 2 to start",
    );
    const worker = workers.find((w) => w.child.pid === hung.pid);
    if (!worker) throw new Error(`step 2 started in process ${hung.pid}, none of these workers`);
    return worker;
  }

  it("SIGKILL of a remote worker mid-run: a second one finishes the run, no completed step runs again", async () => {
    const workers = await Promise.all([sys.startRemoteWorker(env), sys.startRemoteWorker(env)]);
    const { execution_id } = await sys.client.run("r-crashable", {});
    const victim = await runningStep2(workers, execution_id);
    await victim.kill("SIGKILL");

    const done = await sys.client.executions.waitForResult(execution_id, { timeoutMs: 30_000 });
    expect(done).toMatchObject({ status: "completed", result: { ok: true } });
    expect(countEffects(execution_id, "step-1", effectsFile)).toBe(1);
    // The step that was running when its worker died runs again (its result was never stored).
    expect(countEffects(execution_id, "step-2-start", effectsFile)).toBe(2);
    expect(countEffects(execution_id, "step-3", effectsFile)).toBe(1);
    const survivor = workers.find((w) => w !== victim)!;
    expect(
      effects(effectsFile).find((e) => e.execution_id === execution_id && e.label === "step-3")?.pid,
    ).toBe(survivor.child.pid);
    const steps = await sys.client.executions.steps(execution_id);
    expect(steps.map((s) => [s.step_key, s.status])).toEqual([
      ["step-1", "completed"],
      ["step-2", "completed"],
      ["step-3", "completed"],
    ]);
    await survivor.kill("SIGKILL");
  });

  it("SIGTERM of a remote worker hands its running run back at once; another one finishes it", async () => {
    // Heartbeats every 30 s: written off only after 90 s, so a quick recovery is the hand-back's doing.
    const slow = { ...env, SPOOL_HEARTBEAT_SECONDS: "30" };
    const workers = await Promise.all([sys.startRemoteWorker(slow), sys.startRemoteWorker(slow)]);
    const { execution_id } = await sys.client.run("r-crashable", {});
    const leaving = await runningStep2(workers, execution_id);
    await leaving.kill("SIGTERM");
    expect(await leaving.exited).toBe(0);

    const done = await sys.client.executions.waitForResult(execution_id, { timeoutMs: 20_000 });
    expect(done).toMatchObject({ status: "completed", result: { ok: true } });
    expect(countEffects(execution_id, "step-1", effectsFile)).toBe(1);
    expect(countEffects(execution_id, "step-3", effectsFile)).toBe(1);
    // The worker that left said so: it is offline at once, not after 90 s.
    const left = await sys.client.request<{ status: string }>("GET", `/workers/${leaving.workerId}`);
    expect(left.status).toBe("offline");
    await Promise.all(workers.map((w) => w.kill("SIGKILL")));
  });

  it("a queue with limit 2 holds across 2 remote workers and 1 in-cluster worker", async () => {
    // One run at a time per worker: two at once (the limit) are always on two workers.
    const one = { ...env, SPOOL_WORKER_CONCURRENCY: "1" };
    const [remoteA, remoteB, inCluster] = await Promise.all([
      sys.startRemoteWorker(one),
      sys.startRemoteWorker(one),
      sys.startWorker({ ...one, SPOOL_WORKFLOWS_MODULE: REMOTE_WORKFLOWS }),
    ]);
    const runs = await Promise.all(Array.from({ length: 14 }, () => sys.client.run("r-limited", {})));
    for (const { execution_id } of runs) {
      expect((await sys.client.executions.waitForResult(execution_id, { timeoutMs: 60_000 })).status).toBe(
        "completed",
      );
    }
    const ids = new Set(runs.map((r) => r.execution_id));
    const mine = effects(effectsFile).filter((e) => ids.has(e.execution_id));
    // The most runs between a "start" and its "end" at any moment, from every process's records.
    const edges = mine
      .map((e) => ({ at: e.at, delta: e.label === "start" ? 1 : -1 }))
      .sort((a, b) => a.at - b.at || a.delta - b.delta);
    let running = 0;
    let most = 0;
    for (const edge of edges) {
      running += edge.delta;
      most = Math.max(most, running);
    }
    expect(mine.filter((e) => e.label === "start")).toHaveLength(14);
    expect(most).toBe(2);
    // More than one process took runs of the queue (which ones is up to the queue).
    const pids = new Set(mine.map((e) => e.pid));
    expect([...pids].every((pid) => [remoteA, remoteB, inCluster].some((w) => w.child.pid === pid))).toBe(
      true,
    );
    expect(pids.size).toBeGreaterThanOrEqual(2);
  });
});
