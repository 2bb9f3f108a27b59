import { traceIdOf } from "@spool/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countOf } from "../fixtures/side-effects.js";
import { eventually, type Proc, type System, startSystem } from "./harness.js";

describe("durable execution (real API, worker and scheduler processes)", () => {
  let sys: System;
  let workers: (Proc & { workerId: string })[];

  beforeAll(async () => {
    sys = await startSystem();
    workers = await Promise.all([sys.startWorker(), sys.startWorker()]);
    await sys.startScheduler();
  });
  afterAll(() => sys?.stop());

  it("a 3-step workflow run over HTTP completes with the right result; steps are listed in order", async () => {
    const { execution_id } = await sys.client.run("three-steps", { n: 4 });
    const done = await sys.client.executions.waitForResult(execution_id);
    expect(done.status).toBe("completed");
    expect(done.result).toEqual({ a: 5, b: 10, c: "n=4 -> 10" });
    expect(done.started_at).not.toBeNull();
    expect(done.completed_at).not.toBeNull();
    const steps = await sys.client.executions.steps(execution_id);
    expect(steps.map((s) => [s.step_key, s.status, s.output])).toEqual([
      ["add-one", "completed", 5],
      ["double", "completed", 10],
      ["describe", "completed", "n=4 -> 10"],
    ]);
  });

  it("?wait= returns the finished run (200), or its current state when the wait runs out (202)", async () => {
    const finished = await sys.client.request<{ execution_id: string; status: string; result: unknown }>(
      "POST",
      "/workflows/three-steps/run?wait=10",
      { input: { n: 1 } },
    );
    expect(finished).toMatchObject({ status: "completed", result: { a: 2, b: 4, c: "n=1 -> 4" } });
    // The ?wait answer (from the finish announcement when it carries the row) is the run as stored.
    const { execution_id: _id, ...waited } = finished;
    expect(await sys.client.request("GET", `/executions/${finished.execution_id}`)).toEqual(waited);

    // A run that fails answers with its error; a repeated Idempotency-Key answers with the same run.
    const runFatal = () =>
      fetch(`${sys.apiUrl}/api/v1/workflows/fatal/run?wait=10`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${sys.apiKey}`,
          "x-project-id": sys.projectId,
          "content-type": "application/json",
          "idempotency-key": `fatal-${finished.execution_id}`,
        },
        body: JSON.stringify({ input: {} }),
      });
    const failed = await runFatal();
    expect(failed.status).toBe(200);
    const failedBody = (await failed.json()) as { execution_id: string; status: string; error: unknown };
    expect(failedBody).toMatchObject({ status: "failed", error: { message: "order total is negative" } });
    const again = await runFatal();
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await again.json()).toEqual(failedBody);

    const res = await fetch(`${sys.apiUrl}/api/v1/workflows/sleeper/run?wait=0.3`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${sys.apiKey}`,
        "x-project-id": sys.projectId,
        "content-type": "application/json",
      },
      body: JSON.stringify({ input: { ms: 1500 } }),
    });
    expect(res.status).toBe(202);
    const pending = (await res.json()) as { execution_id: string; status: string };
    expect(["queued", "running", "waiting"]).toContain(pending.status);
    const started = Date.now();
    const done = await sys.client.request<{ status: string }>(
      "GET",
      `/executions/${pending.execution_id}?wait=10`,
    );
    expect(done.status).toBe("completed");
    expect(Date.now() - started).toBeLessThan(5000); // woken by the finish, not by the 10 s limit
  });

  it("a run whose step spans were written in parts (a slow step) has every step once in its trace", async () => {
    const done = await sys.client.request<{ execution_id: string; status: string; result: unknown }>(
      "POST",
      "/workflows/slow-middle/run?wait=10",
      { input: {} },
    );
    expect(done).toMatchObject({ status: "completed", result: "done" });
    const trace = await sys.client.request<{
      spans: { name: string; ended_at: string | null; error: unknown }[];
    }>("GET", `/traces/${traceIdOf(done.execution_id)}`);
    expect(trace.spans.map((s) => [s.name, s.ended_at !== null, s.error]).sort()).toEqual([
      ["first", true, null],
      ["last", true, null],
      ["slow", true, null],
      ["slow-middle", true, null],
    ]);
  });

  it("suspend → resume with data → continues with it and completes; a second resume is 409", async () => {
    // ?wait=30&until=blocked answers when the run suspends, not when the 30 s run out.
    const parked = await sys.client.runAndWait(
      "approval",
      { amount: 12 },
      { waitSeconds: 30, until: "blocked" },
    );
    const { execution_id } = parked;
    expect(parked.status).toBe("suspended");
    expect(parked.suspended_step_key).toBe("approve");
    expect(parked.suspended_data).toEqual({ cents: 1200 });

    expect(await sys.client.executions.resume(execution_id, { approved: true, by: "ann" })).toEqual({
      execution_id,
      status: "queued",
    });
    await expect(sys.client.executions.resume(execution_id, { approved: false })).rejects.toMatchObject({
      status: 409,
      errorType: "CONFLICT",
    });
    const done = await sys.client.executions.waitForResult(execution_id);
    expect(done.result).toEqual({ cents: 1200, approved: true, by: "ann" });
    await expect(sys.client.executions.resume(execution_id, {})).rejects.toMatchObject({ status: 409 });
  });

  it("a failing step is retried with backoff, then fails the run with its error visible", async () => {
    const { execution_id } = await sys.client.run("flaky", {});
    const done = await sys.client.executions.waitForResult(execution_id);
    expect(done.status).toBe("failed");
    expect(done.error).toMatchObject({ message: "upstream said no", step_key: "always-fails" });
    const attempts = await sys.db.query(
      "SELECT at FROM test_side_effects WHERE execution_id = $1 AND label = 'attempt' ORDER BY at",
      [execution_id],
    );
    expect(attempts.rows).toHaveLength(3); // first try + 2 retries
    const gaps = attempts.rows.slice(1).map((r, i) => r.at.getTime() - attempts.rows[i].at.getTime());
    // Exponential with jitter: retry n waits between half and all of 200 ms * 2^(n-1).
    expect(gaps[0]).toBeGreaterThanOrEqual(100);
    expect(gaps[1]).toBeGreaterThanOrEqual(200);
    const [step] = await sys.client.executions.steps(execution_id);
    expect(step).toMatchObject({ step_key: "always-fails", status: "failed", attempts: 3 });
  });

  it("a NonRetryableError fails at once: no step retry, no run retry", async () => {
    const { execution_id } = await sys.client.run("fatal", {});
    const done = await sys.client.executions.waitForResult(execution_id);
    expect(done.status).toBe("failed");
    expect(done.attempt).toBe(1);
    expect(done.error).toMatchObject({ name: "NonRetryableError", message: "order total is negative" });
    expect(await countOf(execution_id, "attempt")).toBe(1);
  });

  it("a run-level retry after a failed child starts a new child, then fails with the child's error", async () => {
    const { execution_id } = await sys.client.run("retrying-parent", {});
    const done = await sys.client.executions.waitForResult(execution_id, { timeoutMs: 30_000 });
    expect(done.status).toBe("failed");
    expect(done.attempt).toBe(2);
    expect(done.error).toMatchObject({ name: "ChildWorkflowError", step_key: "call-child" });
    expect(done.error?.message).toContain("child says no");
    const { executions: children } = await sys.client.executions.list({ parent_execution_id: execution_id });
    expect(children.map((c) => c.status)).toEqual(["failed", "failed"]); // one child per attempt
  });

  it("cancelling a running parent cancels its child; cancelling a finished run is 409", async () => {
    const { execution_id } = await sys.client.run("parent", {});
    const child = await eventually(async () => {
      const { executions } = await sys.client.executions.list({ parent_execution_id: execution_id });
      return executions[0]?.status === "suspended" ? executions[0] : undefined;
    });
    expect((await sys.client.executions.get(execution_id)).status).toBe("waiting");

    const cancelled = await sys.client.executions.cancel(execution_id);
    expect(cancelled).toMatchObject({ execution_id, status: "cancelled" });
    expect((await sys.client.executions.get(child.id)).status).toBe("cancelled");
    await expect(sys.client.executions.cancel(execution_id)).rejects.toMatchObject({ status: 409 });
    await expect(sys.client.executions.resume(child.id, {})).rejects.toMatchObject({ status: 409 });

    const { execution_id: finished } = await sys.client.run("quick", {});
    await sys.client.executions.waitForResult(finished);
    await expect(sys.client.executions.cancel(finished)).rejects.toMatchObject({
      status: 409,
      errorType: "CONFLICT",
    });
  });

  it("cancelling a run in the middle of a step: the step finishes, no further step runs", async () => {
    const { execution_id } = await sys.client.run("slow-middle", {});
    await eventually(async () => ((await countOf(execution_id, "slow-start")) === 1 ? true : undefined));
    expect((await sys.client.executions.cancel(execution_id)).status).toBe("cancelled");
    // The worker learns it when it stores the slow step (1.5 s), and stops there.
    await eventually(async () =>
      (
        await sys.client.request<{ steps: { step_key: string }[] }>(
          "GET",
          `/executions/${execution_id}/steps`,
        )
      ).steps.length === 2
        ? true
        : undefined,
    );
    // The worker running it logs that it stopped the run: no step of it runs there after that.
    const ran = await sys.db.query(
      "SELECT DISTINCT pid FROM test_side_effects WHERE execution_id = $1 AND label = 'slow-start'",
      [execution_id],
    );
    const runner = workers.find((w) => w.child.pid === ran.rows[0].pid)!;
    await runner.waitFor((l) => l.msg === "stopped" && l.execution_id === execution_id);
    expect(await countOf(execution_id, "last")).toBe(0);
    expect((await sys.client.executions.get(execution_id)).status).toBe("cancelled");
  });

  it("crash: a worker SIGKILLed during step 2 — another finishes the run and step 1 ran exactly once", async () => {
    const { execution_id } = await sys.client.run("crashable", {});
    await eventually(async () => ((await countOf(execution_id, "step-2-start")) === 1 ? true : undefined));
    const running = await sys.client.executions.get(execution_id);
    expect(running.status).toBe("running");
    const owner = await sys.db.query("SELECT worker_id FROM executions WHERE id = $1", [execution_id]);
    const victim = workers.find((w) => w.workerId === owner.rows[0].worker_id)!;
    expect(victim).toBeDefined();
    await victim.kill("SIGKILL");

    const done = await sys.client.executions.waitForResult(execution_id, { timeoutMs: 45_000 });
    expect(done.status).toBe("completed");
    expect(await countOf(execution_id, "step-1")).toBe(1);
    expect(await countOf(execution_id, "step-2-start")).toBe(2); // it had not finished, so it ran again
    expect(await countOf(execution_id, "step-3")).toBe(1);
    const survivor = workers.find((w) => w !== victim)!;
    const finisher = await sys.db.query(
      "SELECT DISTINCT pid FROM test_side_effects WHERE execution_id = $1 AND label = 'step-3'",
      [execution_id],
    );
    expect(finisher.rows.map((r) => r.pid)).toEqual([survivor.child.pid]);
  });
});
