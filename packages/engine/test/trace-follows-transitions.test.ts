// A trace is written by the transition that changes its run, in the same transaction: whoever sees a
// run's new status (a polling client, a parent, a `?wait=` request) finds a trace that agrees, with
// no span write of the worker's own after the fact.
import { describe, expect, it } from "vitest";
import { claimOf } from "../src/execution/claim.js";
import { createTestEngine, startedRun } from "./engine-fixture.js";

describe("traces follow the execution's transitions", () => {
  it("a run seen completed has a completed root span typed by its registration", async () => {
    const { engine, projectId } = await createTestEngine({ workflows: ["wf"] });
    await engine.registry.registerWorkflows(projectId, "d1", [
      { workflowId: "helper-agent", workflowType: "agent" },
    ]);
    const { receipt } = await engine.executions.run(projectId, {
      workflowId: "helper-agent",
      input: { q: 1 },
    });
    const id = receipt.execution_id;
    const started = await startedRun(engine, id, 0, null);

    await engine.executions.complete(id, claimOf(started!), { text: "done" });

    const trace = await engine.traces.get(projectId, id.replaceAll("-", ""));
    expect(trace.root).toMatchObject({
      status: "completed",
      spanType: "agent",
      name: "helper-agent",
      output: { text: "done" },
    });
    expect(trace.endedAt).toBeInstanceOf(Date);
  });

  it("suspended, then resumed and completed: one wait span, open while suspended, closed after", async () => {
    const { engine, projectId } = await createTestEngine();
    const { receipt } = await engine.executions.run(projectId, { workflowId: "wf", input: {} });
    const id = receipt.execution_id;
    const started = await startedRun(engine, id, 0, null);
    await engine.executions.block({
      executionId: id,
      claim: claimOf(started!),
      waits: [{ stepKey: "approve", seq: 0, kind: "suspend", wakeAt: null, payload: { ask: "ok?" } }],
    });

    const parked = await engine.traces.get(projectId, id.replaceAll("-", ""));
    expect(parked.root.status).toBe("suspended");
    expect(parked.spans.find((s) => s.name === "approve")).toMatchObject({
      status: "pending",
      endedAt: null,
    });

    await engine.executions.resume(projectId, id, { ok: true });
    const restarted = await startedRun(engine, id, 1, null);
    await engine.executions.complete(id, claimOf(restarted!), { approved: true });

    const done = await engine.traces.get(projectId, id.replaceAll("-", ""));
    expect(done.root.status).toBe("completed");
    const approve = done.spans.filter((s) => s.name === "approve");
    expect(approve).toHaveLength(1);
    expect(approve[0]).toMatchObject({ status: "resolved", output: { ok: true } });
    expect(approve[0]!.endedAt).toBeInstanceOf(Date);
  });

  it("a cancelled parent and its child are both cancelled in the trace", async () => {
    const { engine, projectId } = await createTestEngine({ workflows: ["parent", "child"] });
    const { receipt } = await engine.executions.run(projectId, { workflowId: "parent", input: {} });
    const id = receipt.execution_id;
    const started = await startedRun(engine, id, 0, null);
    await engine.executions.block({
      executionId: id,
      claim: claimOf(started!),
      waits: [
        { stepKey: "sub", seq: 0, kind: "invoke", wakeAt: null, child: { workflowId: "child", input: {} } },
      ],
    });

    await engine.executions.cancel(projectId, id);

    const trace = await engine.traces.get(projectId, id.replaceAll("-", ""));
    const runs = trace.spans.filter((s) => s.spanType === "workflow");
    expect(runs.map((s) => [s.name, s.status]).sort()).toEqual([
      ["child", "cancelled"],
      ["parent", "cancelled"],
    ]);
  });

  it("a run waiting for its next attempt is not an error trace; the attempt's error shows as an attribute", async () => {
    const { engine, projectId } = await createTestEngine();
    const { receipt } = await engine.executions.run(projectId, { workflowId: "wf", input: {} });
    const id = receipt.execution_id;
    const error = { name: "Error", message: "flaky upstream" };
    await engine.executions.fail({
      executionId: id,
      claim: claimOf((await startedRun(engine, id, 0, null))!),
      error,
      retry: { retryable: true, maxRetries: 1 },
    });

    const erroring = await engine.traces.list(projectId, { hasError: true }, { limit: 10 });
    expect(erroring.items).toEqual([]);
    const trace = await engine.traces.get(projectId, id.replaceAll("-", ""));
    expect(trace.root).toMatchObject({
      status: "queued",
      error: null,
      attributes: { last_attempt_error: error },
    });

    await engine.executions.fail({
      executionId: id,
      claim: claimOf((await startedRun(engine, id, 1, null))!),
      error,
    });
    const failed = await engine.traces.list(projectId, { hasError: true }, { limit: 10 });
    expect(failed.items.map((s) => s.traceId)).toEqual([id.replaceAll("-", "")]);
  });
});
