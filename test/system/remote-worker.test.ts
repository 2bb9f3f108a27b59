// A remote worker (the SDK's createWorker, in its own process) that holds only the API URL, a key
// and the project id runs every kind of step through the push protocol.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SIGNATURE_HEADER, signPush } from "@spool/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countEffects } from "../fixtures/file-effects.js";
import { eventually, type Proc, type System, startSystem } from "./harness.js";

describe("a remote worker with nothing but the API (createWorker, push protocol)", () => {
  let sys: System;
  let remote: Proc & { workerId: string };
  const effectsFile = join(mkdtempSync(join(tmpdir(), "spool-effects-")), "effects.jsonl");

  beforeAll(async () => {
    sys = await startSystem();
    remote = await sys.startRemoteWorker({ SPOOL_TEST_EFFECTS_FILE: effectsFile });
    await sys.startScheduler();
  });
  afterAll(() => sys?.stop());

  const finished = (id: string) => sys.client.executions.waitForResult(id, { timeoutMs: 30_000 });
  const stepsOf = async (id: string) =>
    (await sys.client.executions.steps(id)).map((s) => [s.step_key, s.status, s.output]);

  it("has no database or Redis URL in its environment, and is registered as a push worker", async () => {
    const environ = readFileSync(`/proc/${remote.child.pid}/environ`, "utf8").split("\0");
    expect(
      environ.some((v) => /^(DATABASE_URL|REDIS_URL|SPOOL_TEST_DATABASE_URL|SPOOL_TEST_REDIS_URL)=/.test(v)),
    ).toBe(false);
    const worker = await sys.client.request<{
      mode: string;
      status: string;
      capabilities: { workflow_ids: string[] };
    }>("GET", `/workers/${remote.workerId}`);
    expect(worker).toMatchObject({ mode: "push", status: "online" });
    expect(worker.capabilities.workflow_ids).toContain("r-three-steps");
  });

  it("runs 3 steps and lists them in order", async () => {
    const { execution_id } = await sys.client.run("r-three-steps", { n: 4 });
    const done = await finished(execution_id);
    expect(done).toMatchObject({ status: "completed", result: { a: 5, b: 10, c: "n=4 -> 10" } });
    expect(await stepsOf(execution_id)).toEqual([
      ["add-one", "completed", 5],
      ["double", "completed", 10],
      ["describe", "completed", "n=4 -> 10"],
    ]);
  });

  it("a run's trace holds its finished span and one span per step, with what each step returned", async () => {
    const { execution_id } = await sys.client.run("r-three-steps", { n: 1 });
    expect((await finished(execution_id)).status).toBe("completed");
    const trace = await sys.client.request<{
      status: string;
      spans: { name: string; span_type: string; output: unknown; error: unknown; ended_at: string | null }[];
    }>("GET", `/traces/${execution_id.replaceAll("-", "")}`);
    expect(trace.status).toBe("completed");
    expect(trace.spans.map((s) => [s.name, s.span_type, s.output, s.error, s.ended_at !== null])).toEqual([
      ["r-three-steps", "workflow", { a: 2, b: 4, c: "n=1 -> 4" }, null, true],
      ["add-one", "step", 2, null, true],
      ["double", "step", 4, null, true],
      ["describe", "step", "n=1 -> 4", null, true],
    ]);
  });

  it("a run whose first step spans went before its completion still ends in one statement, with every span", async () => {
    const { execution_id } = await sys.client.run("r-slow-middle", {});
    const done = await finished(execution_id);
    expect(done).toMatchObject({ status: "completed", result: { c: 3 } });
    // Stored by the completion's own statement (not a write before it): the last step's
    // completed_at is the run's.
    const steps = await sys.client.executions.steps(execution_id);
    expect(steps.map((s) => s.step_key)).toEqual(["first", "slow", "last"]);
    expect(steps.at(-1)?.completed_at).toBe(done.completed_at);
    const trace = await sys.client.request<{ spans: { name: string; span_type: string; output: unknown }[] }>(
      "GET",
      `/traces/${execution_id.replaceAll("-", "")}`,
    );
    expect(trace.spans.map((s) => [s.name, s.span_type, s.output])).toEqual([
      ["r-slow-middle", "workflow", { c: 3 }],
      ["first", "step", 1],
      ["slow", "step", 2],
      ["last", "step", 3],
    ]);
  });

  it("a busy worker sends its runs' reports together, and every run completes with each step once", async () => {
    const batched = async () => {
      const res = await fetch(`${sys.apiUrl}/metrics`, {
        headers: { authorization: `Bearer ${sys.adminKey}` },
      });
      const line = (await res.text())
        .split("\n")
        .find((l) =>
          l.startsWith(
            'spool_http_request_duration_seconds_count{method="POST",route="/internal/reports",status="200"}',
          ),
        );
      return line ? Number(line.split(" ").at(-1)) : 0;
    };
    const before = await batched();
    // Twenty at once on a worker that runs ten at a time: their reports overlap.
    const ids = await Promise.all(
      Array.from({ length: 20 }, async (_, n) => (await sys.client.run("r-three-steps", { n })).execution_id),
    );
    const done = await Promise.all(ids.map(finished));
    for (const [n, d] of done.entries()) {
      expect(d).toMatchObject({ status: "completed", result: { a: n + 1, b: 2 * (n + 1) } });
    }
    for (const [n, id] of ids.entries()) {
      expect(await stepsOf(id)).toEqual([
        ["add-one", "completed", n + 1],
        ["double", "completed", 2 * (n + 1)],
        ["describe", "completed", `n=${n} -> ${2 * (n + 1)}`],
      ]);
    }
    expect(await batched()).toBeGreaterThan(before);
  });

  it("sleeps 2 s on a durable timer, then goes on", async () => {
    const { execution_id } = await sys.client.run("r-sleeper", { ms: 2000 });
    await eventually(async () =>
      (await sys.client.executions.get(execution_id)).status === "waiting" ? true : undefined,
    );
    const done = await finished(execution_id);
    expect(done.status).toBe("completed");
    expect((done.result as { sleptMs: number }).sleptMs).toBeGreaterThanOrEqual(2000);
    expect(
      (await sys.client.executions.steps(execution_id)).map((s) => [s.step_key, s.kind, s.status]),
    ).toEqual([
      ["start", "now", "completed"],
      ["nap", "sleep", "completed"],
      ["end", "now", "completed"],
    ]);
  });

  it("waits for an event and gets it", async () => {
    const topic = `orders-${Date.now()}`;
    const { execution_id } = await sys.client.run("r-wait-event", { topic });
    await eventually(async () =>
      (await sys.client.executions.get(execution_id)).status === "waiting" ? true : undefined,
    );
    const [event] = await sys.client.events.publish(topic, { status: "shipped" });
    const done = await finished(execution_id);
    expect(done.result).toEqual({ status: "shipped", sequence: event!.sequence_id });
    expect(await stepsOf(execution_id)).toEqual([
      ["shipped", "completed", expect.objectContaining({ topic })],
    ]);
  });

  it("suspends, shows what it waits for, and goes on with the resume data", async () => {
    const { execution_id } = await sys.client.run("r-approval", { amount: 3 });
    const parked = await eventually(async () => {
      const e = await sys.client.executions.get(execution_id);
      return e.status === "suspended" ? e : undefined;
    });
    expect(parked).toMatchObject({ suspended_step_key: "approve", suspended_data: { cents: 300 } });
    await sys.client.executions.resume(execution_id, { approved: true });
    const done = await finished(execution_id);
    expect(done.result).toEqual({ cents: 300, approved: true });
    expect(await stepsOf(execution_id)).toEqual([
      ["prepare", "completed", 300],
      ["approve", "completed", { approved: true }],
      ["finish", "completed", { cents: 300, approved: true }],
    ]);
  });

  it("starts a child and waits for its result", async () => {
    const { execution_id } = await sys.client.run("r-parent", { n: 7 });
    const done = await finished(execution_id);
    expect(done).toMatchObject({ status: "completed", result: { squared: 49 } });
    expect(await stepsOf(execution_id)).toEqual([["child", "completed", 49]]);
    const { executions: children } = await sys.client.executions.list({ parent_execution_id: execution_id });
    expect(children.map((c) => [c.workflow_id, c.status])).toEqual([["r-child", "completed"]]);
  });

  it("starts a batch of 3 children at once and continues when all are done", async () => {
    const { execution_id } = await sys.client.run("r-fan-out", {});
    const done = await finished(execution_id);
    expect(done).toMatchObject({ status: "completed", result: { results: [1, 4, 9] } });
    expect(await stepsOf(execution_id)).toEqual([
      ["child-1", "completed", 1],
      ["child-2", "completed", 4],
      ["child-3", "completed", 9],
    ]);
  });

  it("retries a step that fails twice, then succeeds", async () => {
    const { execution_id } = await sys.client.run("r-flaky", {});
    const done = await finished(execution_id);
    expect(done).toMatchObject({ status: "completed", result: "third time lucky" });
    expect(countEffects(execution_id, "attempt", effectsFile)).toBe(3);
    const [step] = await sys.client.executions.steps(execution_id);
    expect(step).toMatchObject({ step_key: "flaky-call", status: "completed", attempts: 3 });
  });

  it("a step result over Spool's limit fails the step and the run once, instead of running the step again", async () => {
    const { execution_id } = await sys.client.run("r-huge", {});
    const done = await finished(execution_id);
    expect(done.status).toBe("failed");
    // The push told the worker Spool's limit (1 MiB): it fails the step itself, as an in-cluster
    // worker does, without sending 2 MiB anywhere.
    const bytes = 2 * 1024 * 1024 + 2;
    const error = {
      name: "StepResultTooLargeError",
      message: `step 'too-big' returned 2 MiB of JSON (${bytes} bytes), over the 1 MiB limit (SPOOL_MAX_STEP_RESULT_BYTES)`,
    };
    expect(done.error).toMatchObject({ ...error, step_key: "too-big" });
    const [step] = await sys.client.executions.steps(execution_id);
    expect(step).toMatchObject({ step_key: "too-big", status: "failed", output: null, error });
    expect(countEffects(execution_id, "too-big", effectsFile)).toBe(1);
  });

  it("a last step another worker stored first wins: the run is replayed with it, and its step not run again", async () => {
    const { execution_id } = await sys.client.run("r-contested-last", {});
    expect(await finished(execution_id)).toMatchObject({ status: "completed", result: "last was theirs" });
    expect(await stepsOf(execution_id)).toEqual([["last", "completed", "theirs"]]);
    expect(countEffects(execution_id, "last", effectsFile)).toBe(1);
    await remote.waitFor(
      (l) => l.execution_id === execution_id && String(l.msg).includes("replaying from the journal"),
    );
  });

  it("a last step and a result too large to send together are sent apart, and the run completes", async () => {
    const { execution_id } = await sys.client.run("r-big-last", {});
    const done = await finished(execution_id);
    expect(done.status).toBe("completed");
    expect((done.result as { length: number }).length).toBe(600 * 1024);
    const steps = await sys.client.executions.steps(execution_id);
    expect(steps.map((s) => [s.step_key, s.status, (s.output as string).length])).toEqual([
      ["big", "completed", 600 * 1024],
    ]);
  });

  it("a result that fits, with step keys that do not fit beside it, is sent alone and the run completes", async () => {
    const { execution_id } = await sys.client.run("r-many-then-big", {});
    const done = await finished(execution_id);
    expect(done.status).toBe("completed");
    expect((done.result as string).length).toBe(1024 * 1024 - 40 * 1024);
    expect(await sys.client.executions.steps(execution_id)).toHaveLength(200);
  });

  it("cancelling a run in the middle of a step tells its worker, which stores nothing more", async () => {
    const { execution_id } = await sys.client.run("r-crashable", {});
    await eventually(async () =>
      countEffects(execution_id, "step-2-start", effectsFile) === 1 ? true : undefined,
    );
    await sys.client.executions.cancel(execution_id);
    // The signed cancel reached the worker, which verified it and stops the run.
    await remote.waitFor(
      (l) => l.msg === "run cancelled by Spool; stopping it" && l.execution_id === execution_id,
    );
    expect((await sys.client.executions.get(execution_id)).status).toBe("cancelled");
    expect(await stepsOf(execution_id)).toEqual([["step-1", "completed", null]]);
  });

  it("the same push sent again (a retrying proxy, say) does not start the run a second time", async () => {
    const { execution_id } = await sys.client.run("r-crashable", {});
    await eventually(async () =>
      countEffects(execution_id, "step-2-start", effectsFile) === 1 ? true : undefined,
    );
    const run = await sys.engine.prisma.execution.findUniqueOrThrow({ where: { id: execution_id } });
    const worker = await sys.engine.prisma.worker.findUniqueOrThrow({ where: { id: remote.workerId } });
    const text = JSON.stringify({
      worker_id: worker.id,
      execution_id,
      workflow_id: run.workflowId,
      payload: run.input,
      spool_claim: `${run.dispatchSeq}.${run.lease}`,
    });
    const again = await fetch(new URL("execute", `${worker.pushEndpointUrl}/`), {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-worker-id": worker.id,
        [SIGNATURE_HEADER]: signPush(worker.pushSecret!, text),
      },
      body: text,
    });
    expect(again.status).toBe(200);
    await remote.waitFor(
      (l) =>
        l.msg === "the same push again; the run is running here already" && l.execution_id === execution_id,
    );
    await sys.client.executions.cancel(execution_id);
    await remote.waitFor(
      (l) => l.msg === "run cancelled by Spool; stopping it" && l.execution_id === execution_id,
    );
    expect(countEffects(execution_id, "step-2-start", effectsFile)).toBe(1);
  });

  it("a sleeping run is cancelled: it stays cancelled and never wakes", async () => {
    const { execution_id } = await sys.client.run("r-sleeper", { ms: 60_000 });
    await eventually(async () =>
      (await sys.client.executions.get(execution_id)).status === "waiting" ? true : undefined,
    );
    const cancelled = await sys.client.executions.cancel(execution_id);
    expect(cancelled.status).toBe("cancelled");
    expect((await sys.client.executions.get(execution_id)).status).toBe("cancelled");
    expect(await stepsOf(execution_id)).toEqual([["start", "completed", expect.any(String)]]);
  });
});
