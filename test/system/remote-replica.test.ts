// With several API replicas, a push worker's calls mostly reach one that did not push the run. That
// replica reads the run on the first call under the push's claim and acts on it without reading
// after; a call that comes once the run has moved on is still refused and changes nothing.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RawProtocolWorker } from "../remote/raw-worker.js";
import { eventually, type System, startSystem } from "./harness.js";

describe("a push worker whose calls reach an API replica that did not push its runs", () => {
  let sys: System;
  /** A second API process: it pushes nothing (SPOOL_PUSH_DISPATCH=false), the test's API pushes. */
  let replica: { url: string };
  let raw: RawProtocolWorker;

  beforeAll(async () => {
    sys = await startSystem();
    replica = await sys.startApiProcess();
    raw = new RawProtocolWorker({
      apiUrl: replica.url,
      apiKey: sys.apiKey,
      projectId: sys.projectId,
      deploymentId: `replica-${randomUUID().slice(0, 8)}`,
      // Holds the run: the test makes its calls itself.
      scripts: { "replica-hold": async () => {} },
    });
    await raw.listen();
    await raw.register([{ id: "replica-hold" }]);
  });
  afterAll(async () => {
    await raw?.close();
    await sys?.stop();
  });

  const status = async (id: string) => (await sys.client.executions.get(id)).status;

  it("an SDK worker runs 3 steps through the replica, and the trace has the run's and each step's span", async () => {
    await sys.startRemoteWorker({ SPOOL_API_URL: replica.url });
    const { execution_id } = await sys.client.run("r-three-steps", { n: 4 });
    const done = await sys.client.executions.waitForResult(execution_id, { timeoutMs: 30_000 });
    expect(done).toMatchObject({ status: "completed", result: { a: 5, b: 10, c: "n=4 -> 10" } });
    expect((await sys.client.executions.steps(execution_id)).map((s) => [s.step_key, s.output])).toEqual([
      ["add-one", 5],
      ["double", 10],
      ["describe", "n=4 -> 10"],
    ]);
    const trace = await sys.client.request<{ status: string; spans: { name: string; span_type: string }[] }>(
      "GET",
      `/traces/${execution_id.replaceAll("-", "")}`,
    );
    expect(trace.status).toBe("completed");
    expect(trace.spans.map((s) => s.span_type).sort()).toEqual(["step", "step", "step", "workflow"]);
  });

  it("calls under the push's claim after the run was cancelled get 409, and the run stays cancelled", async () => {
    const { execution_id } = await sys.client.run("replica-hold", {});
    const push = await raw.nextPush((p) => p.body.execution_id === execution_id);
    const claim = String((push.body as { spool_claim?: string }).spool_claim);
    const asPushedWorker = (path: string, body: unknown) =>
      fetch(`${replica.url}/internal/executions/${execution_id}/${path}`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${sys.apiKey}`,
          "x-project-id": sys.projectId,
          "content-type": "application/json",
          "x-worker-id": raw.workerId,
          "x-spool-claim": claim,
        },
        body: JSON.stringify(body),
      });
    // The first call reads the run; the replica now knows it under this claim.
    expect((await asPushedWorker("steps", { step_key: "a", outputs: 1, success: true })).status).toBe(200);
    expect((await asPushedWorker("steps", { step_key: "b", outputs: 2, success: true })).status).toBe(200);

    await sys.client.executions.cancel(execution_id);
    await eventually(async () =>
      raw.cancels.some((c) => c.executionId === execution_id) ? true : undefined,
    );
    const at = new Date().toISOString();
    const spans = await asPushedWorker("step-spans", {
      steps: [{ step_key: "c", kind: "run", status: "failed", attempts: 1, started_at: at, ended_at: at }],
    });
    expect(spans.status).toBe(409);
    const late = await asPushedWorker("steps", {
      step_key: "c",
      outputs: 3,
      success: false,
      error: { message: "x" },
    });
    expect(late.status).toBe(409);
    expect(await late.json()).toMatchObject({ error_type: "CONFLICT" });
    const complete = await asPushedWorker("complete", { result: 1, worker_id: raw.workerId });
    expect(complete.status).toBe(409);
    expect(await status(execution_id)).toBe("cancelled");
    expect((await sys.client.executions.steps(execution_id)).map((s) => s.step_key)).toEqual(["a", "b"]);
  });
});
