// The push protocol as a Polos SDK worker speaks it (spec/worker-protocol.md), from a worker written
// with raw HTTP and no Spool code: registration, signed pushes, steps, waits, children, retries,
// capacity, cancellation, sessions, spans, and the fences around all of it.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PushContext, RawProtocolWorker } from "../remote/raw-worker.js";
import { eventually, type System, startSystem } from "./harness.js";

const status = async (sys: System, id: string) => (await sys.client.executions.get(id)).status;
const until = (sys: System, id: string, wanted: string) =>
  eventually(async () => ((await status(sys, id)) === wanted ? true : undefined), 20_000, `${id} ${wanted}`);
const outputs = <T>(ctx: PushContext, key: string) => ctx.steps.get(key)?.outputs as T;

describe("the worker protocol, spoken by a raw HTTP worker", () => {
  let sys: System;
  let worker: RawProtocolWorker;
  const deploymentId = `polos-${randomUUID().slice(0, 8)}`;
  /** What `…/complete` answered each proto-last-step run. */
  const lastStepAnswers = new Map<string, { status: number; body: unknown }>();
  /** When set, proto-order holds between its suspend_ event and its /wait call until it resolves. */
  let gap: { reached: () => void; release: Promise<void> } | null = null;
  const publish = (topic: string, eventType: string, data: unknown) =>
    worker.call("POST", "/api/v1/events/publish", { topic, events: [{ event_type: eventType, data }] });

  beforeAll(async () => {
    // A database of its own: the schedulers of other test files sweep every project of the shared
    // one, and would release the run of the worker this file writes off before it re-registers.
    sys = await startSystem({ ownDatabase: true });
    worker = new RawProtocolWorker({
      apiUrl: sys.apiUrl,
      apiKey: sys.apiKey,
      projectId: sys.projectId,
      deploymentId,
      scripts: {
        // Two suspends (one answered by a resume_ event, one by POST /resume), then a child it waits for.
        "proto-order": async (ctx) => {
          const { total } = ctx.push.payload as { total: number };
          if (!ctx.steps.has("validate")) await ctx.saveStep("validate", { total });
          for (const key of ["approve", "confirm"]) {
            if (ctx.steps.has(key)) continue;
            await publish(ctx.topic, `suspend_${key}`, { question: `${key} ${total}?` });
            if (gap && key === "approve") {
              gap.reached();
              await gap.release;
            }
            await ctx.wait({ step_key: key, wait_type: "suspend", wait_topic: ctx.topic });
            return;
          }
          if (!ctx.steps.has("child")) {
            await ctx.call("POST", "/api/v1/workflows/proto-child/run", {
              payload: { n: total },
              deployment_id: ctx.push.deployment_id,
              parent_execution_id: ctx.push.execution_id,
              root_execution_id: ctx.push.root_execution_id,
              root_workflow_id: ctx.push.root_workflow_id,
              step_key: "child",
              wait_for_subworkflow: true,
            });
            return; // the SDK throws its WaitError: nothing more for this push
          }
          await ctx.complete({
            approved: outputs<{ data: unknown }>(ctx, "approve").data,
            confirmed: outputs<{ data: unknown }>(ctx, "confirm").data,
            child: outputs(ctx, "child"),
          });
        },
        "proto-child": async (ctx) => {
          const { n } = ctx.push.payload as { n: number };
          if (n < 0) return void (await ctx.fail("negative", false));
          await ctx.complete({ doubled: n * 2 });
        },
        "proto-batch": async (ctx) => {
          if (ctx.steps.has("all")) return void (await ctx.complete(outputs(ctx, "all")));
          await ctx.call("POST", "/api/v1/workflows/batch_run", {
            workflows: [1, -2, 3].map((n) => ({ workflow_id: "proto-child", payload: { n } })),
            deployment_id: ctx.push.deployment_id,
            parent_execution_id: ctx.push.execution_id,
            root_execution_id: ctx.push.root_execution_id,
            root_workflow_id: ctx.push.root_workflow_id,
            step_key: "all",
            wait_for_subworkflow: true,
          });
        },
        "proto-timer": async (ctx) => {
          if (!ctx.steps.has("nap")) {
            await ctx.wait({
              step_key: "nap",
              wait_type: "time",
              wait_until: new Date(Date.now() + 1500).toISOString(),
            });
            return;
          }
          if (!ctx.steps.has("event")) {
            const expires = new Date(Date.now() + 1000).toISOString();
            await ctx.wait({
              step_key: "event",
              wait_type: "event",
              wait_topic: `never-${ctx.push.execution_id}`,
              wait_until: expires,
              expires_at: expires,
            });
            return;
          }
          await ctx.complete({ nap: ctx.steps.get("nap"), event: ctx.steps.get("event") });
        },
        "proto-flaky": async (ctx) => void (await ctx.fail(`attempt ${ctx.push.retry_count} failed`, true)),
        // Two children suspending on the same step key, on the topic their tree shares.
        "proto-twins": async (ctx) => {
          if (ctx.steps.has("both")) return void (await ctx.complete(outputs(ctx, "both")));
          await ctx.call("POST", "/api/v1/workflows/batch_run", {
            workflows: ["a", "b"].map((who) => ({ workflow_id: "proto-suspender", payload: { who } })),
            parent_execution_id: ctx.push.execution_id,
            root_execution_id: ctx.push.root_execution_id,
            root_workflow_id: ctx.push.root_workflow_id,
            step_key: "both",
            wait_for_subworkflow: true,
          });
        },
        "proto-suspender": async (ctx) => {
          if (ctx.steps.has("approve")) {
            return void (await ctx.complete(outputs<{ data: unknown }>(ctx, "approve").data));
          }
          await publish(ctx.topic, "suspend_approve", { who: (ctx.push.payload as { who: string }).who });
          await ctx.wait({ step_key: "approve", wait_type: "suspend", wait_topic: ctx.topic });
        },
        // Takes the push and reports nothing: a run that is busy for as long as the test wants.
        "proto-hold": async () => {},
        // Spool's extension: the last step's result sent with the completion (`last_step`). When
        // `contested`, a result for that step is stored first, as another worker's would be.
        "proto-last-step": async (ctx) => {
          const { contested } = ctx.push.payload as { contested: boolean };
          await ctx.saveStep("a", 1);
          if (contested) await ctx.saveStep("b", "theirs");
          const now = new Date().toISOString();
          const span = (key: string) => ({
            step_key: key,
            kind: "run",
            status: "completed",
            attempts: 1,
            started_at: now,
            ended_at: now,
          });
          const res = await ctx.call("POST", `/internal/executions/${ctx.push.execution_id}/complete`, {
            result: "b was mine",
            worker_id: ctx.push.worker_id,
            // The spans of every step it ran: Spool completes in one statement when they cover them.
            step_spans: [span("a"), span("b")],
            last_step: { step_key: "b", outputs: "mine" },
          });
          lastStepAnswers.set(ctx.push.execution_id, { status: res.status, body: await res.json() });
          // Refused: the run is this worker's still, and finishes from what is stored.
          if (res.status === 409) await ctx.complete("b was theirs");
        },
      },
    });
    await worker.listen();
  });
  afterAll(async () => {
    await worker?.close();
    await sys?.stop();
  });

  it("registers before its deployment exists, then takes pushes signed with the secret it was given", async () => {
    expect((await worker.call("GET", `/api/v1/deployments/${deploymentId}`, undefined, "")).status).toBe(404);
    await worker.register(
      [
        "proto-order",
        "proto-child",
        "proto-batch",
        "proto-timer",
        "proto-flaky",
        "proto-hold",
        "proto-twins",
        "proto-suspender",
        "proto-last-step",
      ].map((id) => ({ id })),
    );
    expect(await worker.heartbeat()).toEqual({ re_register: false });
    const active = (await (await worker.call("GET", "/api/v1/workers/active")).json()) as {
      worker_ids: string[];
    };
    expect(active.worker_ids).toContain(worker.workerId);
    // The protocol's queue convention: a workflow's queue is named after it.
    expect(
      (await sys.client.request<{ queue_name: string }>("GET", "/workflows/proto-order")).queue_name,
    ).toBe("proto-order");
  });

  it("runs a workflow through suspends (resume_ event and POST /resume) and a child it waits for", async () => {
    const { execution_id } = await sys.client.request<{ execution_id: string }>(
      "POST",
      "/workflows/proto-order/run",
      { payload: { total: 21 } },
    );
    const first = await worker.nextPush((p) => p.body.execution_id === execution_id);
    expect(first.body).toMatchObject({
      worker_id: worker.workerId,
      workflow_id: "proto-order",
      deployment_id: deploymentId,
      payload: { total: 21 },
      parent_execution_id: null,
      root_execution_id: execution_id,
      root_workflow_id: "proto-order",
      step_key: null,
      retry_count: 0,
      session_id: null,
      otel_span_id: null,
      run_timeout_seconds: null,
    });
    expect(first.headers["x-worker-id"]).toBe(worker.workerId);
    expect(worker.signedBySpool(first)).toBe(true);

    await until(sys, execution_id, "suspended");
    const suspended = await sys.client.executions.get(execution_id);
    expect(suspended).toMatchObject({
      suspended_step_key: "approve",
      suspended_data: { question: "approve 21?" },
    });
    const topic = `workflow/proto-order/${execution_id}`;
    expect((await publish(topic, "resume_approve", { approved: true })).status).toBe(201);

    await until(sys, execution_id, "suspended");
    await eventually(async () =>
      (await sys.client.executions.get(execution_id)).suspended_step_key === "confirm" ? true : undefined,
    );
    expect(await sys.client.executions.resume(execution_id, { by: "ann" })).toEqual({
      execution_id,
      status: "queued",
    });

    const done = await sys.client.executions.waitForResult(execution_id, { timeoutMs: 20_000 });
    expect(done).toMatchObject({
      status: "completed",
      result: { approved: { approved: true }, confirmed: { by: "ann" }, child: { doubled: 42 } },
    });
    const steps = await sys.client.executions.steps(execution_id);
    expect(steps.map((s) => [s.step_key, s.kind, s.status])).toEqual([
      ["validate", "run", "completed"],
      ["approve", "suspend", "completed"],
      ["confirm", "suspend", "completed"],
      ["child", "invoke", "completed"],
    ]);
    // Each push carries the run's journal as it started (Spool's extension): the first none, the
    // one after the first resume what was stored before it.
    const journals = worker.pushes
      .filter((p) => p.body.execution_id === execution_id)
      .map(
        (p) =>
          (p.body as { spool_journal?: { steps: { step_key: string; success: boolean }[] } }).spool_journal,
      );
    expect(journals[0]).toEqual({ steps: [], waits: [] });
    expect(journals[1]?.steps.map((s) => [s.step_key, s.success])).toEqual([
      ["validate", true],
      ["approve", true],
    ]);
    // A suspend's result is the resume event's envelope, as the SDK reads it (`.data`).
    expect(steps[1]!.output).toMatchObject({ topic, event_type: "resume_approve", data: { approved: true } });
    const { executions: children } = await sys.client.executions.list({ parent_execution_id: execution_id });
    expect(children.map((c) => [c.workflow_id, c.status, c.step_key])).toEqual([
      ["proto-child", "completed", "child"],
    ]);
    const childPush = await worker.nextPush((p) => p.body.execution_id === children[0]!.id);
    expect(childPush.body).toMatchObject({
      parent_execution_id: execution_id,
      root_execution_id: execution_id,
      root_workflow_id: "proto-order",
      step_key: "child",
    });
  });

  it("a resume published between the suspend event and the /wait call still answers it", async () => {
    let reached!: () => void;
    let release!: () => void;
    const atGap = new Promise<void>((resolve) => {
      reached = resolve;
    });
    gap = { reached, release: new Promise<void>((resolve) => (release = resolve)) };
    try {
      const { execution_id } = await sys.client.request<{ execution_id: string }>(
        "POST",
        "/workflows/proto-order/run",
        { payload: { total: 1 } },
      );
      await atGap; // suspend_approve is out; the run is still running, its wait not recorded yet
      expect(await status(sys, execution_id)).toBe("running");
      await publish(`workflow/proto-order/${execution_id}`, "resume_approve", { approved: false });
      release();
      await eventually(async () =>
        (await sys.client.executions.get(execution_id)).suspended_step_key === "confirm" ? true : undefined,
      );
      const approve = (await sys.client.executions.steps(execution_id)).find((s) => s.step_key === "approve");
      expect(approve?.output).toMatchObject({ event_type: "resume_approve", data: { approved: false } });
      await sys.client.executions.cancel(execution_id);
    } finally {
      gap = null;
      release();
    }
  });

  it("POST /resume answers the run it names, not another of its tree suspended on the same step key", async () => {
    const { execution_id } = await sys.client.request<{ execution_id: string }>(
      "POST",
      "/workflows/proto-twins/run",
      {
        payload: {},
      },
    );
    const children = await eventually(async () => {
      const { executions } = await sys.client.executions.list({ parent_execution_id: execution_id });
      return executions.length === 2 && executions.every((e) => e.status === "suspended")
        ? executions
        : undefined;
    });
    const [first, second] = children;
    await sys.client.executions.resume(first!.id, { ok: "first" });
    expect((await sys.client.executions.waitForResult(first!.id)).result).toEqual({ ok: "first" });
    expect(await status(sys, second!.id)).toBe("suspended");
    await sys.client.executions.resume(second!.id, { ok: "second" });
    const done = await sys.client.executions.waitForResult(execution_id, { timeoutMs: 20_000 });
    expect(
      (done.result as { result: unknown }[])
        .map((r) => r.result)
        .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
    ).toEqual([{ ok: "first" }, { ok: "second" }]);
  });

  it("waits for a batch of children and gets each one's outcome in request order", async () => {
    const { execution_id } = await sys.client.request<{ execution_id: string }>(
      "POST",
      "/workflows/proto-batch/run",
      {
        payload: {},
      },
    );
    const done = await sys.client.executions.waitForResult(execution_id, { timeoutMs: 20_000 });
    expect(done.status).toBe("completed");
    expect(done.result).toEqual([
      expect.objectContaining({ workflow_id: "proto-child", success: true, result: { doubled: 2 } }),
      expect.objectContaining({
        workflow_id: "proto-child",
        success: false,
        error: expect.stringContaining("negative"),
      }),
      expect.objectContaining({ workflow_id: "proto-child", success: true, result: { doubled: 6 } }),
    ]);
  });

  it("a time wait wakes the run with {wait_until}; an event wait that expires stores a failed step", async () => {
    const { execution_id } = await sys.client.request<{ execution_id: string }>(
      "POST",
      "/workflows/proto-timer/run",
      {
        payload: {},
      },
    );
    await until(sys, execution_id, "waiting");
    const done = await sys.client.executions.waitForResult(execution_id, { timeoutMs: 20_000 });
    const result = done.result as {
      nap: { outputs: { wait_until: string }; success: boolean };
      event: { success: boolean; error: { message: string } };
    };
    expect(result.nap.success).toBe(true);
    expect(Date.parse(result.nap.outputs.wait_until)).toBeGreaterThan(Date.parse(done.created_at));
    expect(result.event.success).toBe(false);
    expect(result.event.error.message).toMatch(/expired/);
  });

  it("a retryable failure is pushed again with retry_count + 1 until the budget of 2 retries is spent", async () => {
    const { execution_id } = await sys.client.request<{ execution_id: string }>(
      "POST",
      "/workflows/proto-flaky/run",
      {
        payload: {},
      },
    );
    const done = await sys.client.executions.waitForResult(execution_id, { timeoutMs: 30_000 });
    expect(done).toMatchObject({ status: "failed", attempt: 3, error: { message: "attempt 2 failed" } });
    const counts = worker.pushes
      .filter((p) => p.body.execution_id === execution_id)
      .map((p) => p.body.retry_count);
    expect(counts).toEqual([0, 1, 2]);
  });

  it("takes the last step with the completion; a result stored first for it wins and the completion is refused", async () => {
    const run = async (contested: boolean) => {
      const { execution_id } = await sys.client.request<{ execution_id: string }>(
        "POST",
        "/workflows/proto-last-step/run",
        { payload: { contested } },
      );
      const done = await sys.client.executions.waitForResult(execution_id, { timeoutMs: 30_000 });
      const stored = await sys.client.executions.steps(execution_id);
      // The worker notes the answer once it has read it, which may be after the run completed.
      const answer = await eventually(async () => lastStepAnswers.get(execution_id), 20_000, "answer");
      return { done, stored, steps: stored.map((s) => [s.step_key, s.output]), answer };
    };

    const plain = await run(false);
    expect(plain.answer?.status).toBe(200);
    expect(plain.done).toMatchObject({ status: "completed", result: "b was mine" });
    expect(plain.steps).toEqual([
      ["a", 1],
      ["b", "mine"],
    ]);
    // Stored by the completion's own statement: the step's completed_at is the run's.
    expect(plain.stored.find((s) => s.step_key === "b")?.completed_at).toBe(plain.done.completed_at);

    const contested = await run(true);
    expect(contested.answer).toEqual({
      status: 409,
      body: {
        error: expect.stringContaining("step 'b' was stored by another worker first"),
        error_type: "CONFLICT",
        details: { reason: "step_superseded", step_key: "b" },
      },
    });
    expect(contested.done).toMatchObject({ status: "completed", result: "b was theirs" });
    expect(contested.steps).toEqual([
      ["a", 1],
      ["b", "theirs"],
    ]);
  });

  it("Spool's batch of reports: each is answered as its own route would answer it, a refused one changes nothing", async () => {
    const held = async () => {
      const { execution_id } = await sys.client.request<{ execution_id: string }>(
        "POST",
        "/workflows/proto-hold/run",
        { payload: {} },
      );
      const push = await worker.nextPush((p) => p.body.execution_id === execution_id);
      return { id: execution_id, claim: String((push.body as { spool_claim?: string }).spool_claim) };
    };
    const [a, b, c] = [await held(), await held(), await held()];
    const failed = { step_key: "s", outputs: null, success: false, error: { message: "no" } };
    const res = await worker.call("POST", "/internal/reports", {
      reports: [
        { execution_id: a.id, claim: a.claim, step: { step_key: "s", outputs: 1 } },
        // Another start's claim: fenced off (a failed result is not kept for the next worker).
        { execution_id: b.id, claim: "999.999", step: failed },
        { execution_id: randomUUID(), claim: a.claim, step: failed },
        { execution_id: c.id, claim: c.claim, complete: { result: "c done", worker_id: worker.workerId } },
      ],
    });
    expect(res.status).toBe(200);
    const { results } = (await res.json()) as { results: { status: number; [k: string]: unknown }[] };
    expect(results.map((r) => r.status)).toEqual([200, 409, 404, 200]);
    expect(results[0]?.body).toMatchObject({ step: { step_key: "s", outputs: 1, success: true } });
    expect(results[1]).toMatchObject({ error_type: "CONFLICT", error: expect.any(String) });
    expect(results[2]).toMatchObject({ error_type: "NOT_FOUND" });
    expect(results[3]).toEqual({ status: 200, body: { accepted: true } });

    expect((await sys.client.executions.steps(a.id)).map((s) => [s.step_key, s.output])).toEqual([["s", 1]]);
    expect(await sys.client.executions.steps(b.id)).toEqual([]);
    expect(await status(sys, b.id)).toBe("running");
    expect(await sys.client.executions.waitForResult(c.id, { timeoutMs: 10_000 })).toMatchObject({
      status: "completed",
      result: "c done",
    });

    // An invalid report refuses the whole batch (400) and stores none of it.
    const invalid = await worker.call("POST", "/internal/reports", {
      reports: [
        { execution_id: b.id, claim: b.claim, step: { step_key: "ok", outputs: 2 } },
        { execution_id: b.id, claim: b.claim, step: { step_key: "both" }, complete: { result: 1 } },
      ],
    });
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toMatchObject({ error_type: "INVALID_INPUT" });
    expect(await sys.client.executions.steps(b.id)).toEqual([]);
    for (const r of [a, b]) await sys.client.executions.cancel(r.id);
  });

  it("a worker at capacity (429) gets the run again later, no attempt used", async () => {
    worker.busyFor = 2;
    const { execution_id } = await sys.client.request<{ execution_id: string }>(
      "POST",
      "/workflows/proto-child/run",
      {
        payload: { n: 5 },
      },
    );
    const done = await sys.client.executions.waitForResult(execution_id, { timeoutMs: 20_000 });
    expect(done).toMatchObject({ status: "completed", attempt: 1, result: { doubled: 10 } });
    expect(worker.busyFor).toBe(0);
  });

  it("a worker answering 5xx gets the run again once it recovers, no attempt used", async () => {
    worker.failFor = 2;
    const { execution_id } = await sys.client.request<{ execution_id: string }>(
      "POST",
      "/workflows/proto-child/run",
      {
        payload: { n: 6 },
      },
    );
    const done = await sys.client.executions.waitForResult(execution_id, { timeoutMs: 20_000 });
    expect(done).toMatchObject({ status: "completed", attempt: 1, result: { doubled: 12 } });
    expect(worker.failFor).toBe(0);
    // Trouble pauses pushes to the worker; it never took it offline.
    expect((await sys.client.request<{ status: string }>("GET", `/workers/${worker.workerId}`)).status).toBe(
      "online",
    );
  });

  it("never pushes a worker more runs than its max_concurrent_executions", async () => {
    const held: (() => void)[] = [];
    const solo = new RawProtocolWorker({
      apiUrl: sys.apiUrl,
      apiKey: sys.apiKey,
      projectId: sys.projectId,
      deploymentId: `${deploymentId}-solo`,
      maxConcurrent: 1,
      scripts: {
        "proto-solo": async (ctx) => {
          await new Promise<void>((resolve) => held.push(resolve));
          await ctx.complete("done");
        },
      },
    });
    await solo.listen();
    try {
      await solo.register([{ id: "proto-solo" }]);
      const runs = await Promise.all(
        [1, 2, 3].map(() =>
          sys.client.request<{ execution_id: string }>("POST", "/workflows/proto-solo/run", { payload: {} }),
        ),
      );
      for (let finished = 0; finished < 3; finished++) {
        await eventually(async () => (held.length === finished + 1 ? true : undefined));
        // One run out at a time: the others stay queued until it is done.
        const states = await Promise.all(runs.map((r) => status(sys, r.execution_id)));
        expect(states.filter((s) => s === "running")).toHaveLength(1);
        expect(solo.pushes).toHaveLength(finished + 1);
        held[finished]!();
      }
      for (const r of runs)
        expect((await sys.client.executions.waitForResult(r.execution_id)).result).toBe("done");
    } finally {
      for (const release of held) release();
      await solo.close();
    }
  });

  it("cancelling a pushed run tells its worker, whose confirmation is accepted; later reports get 409", async () => {
    const { execution_id } = await sys.client.request<{ execution_id: string }>(
      "POST",
      "/workflows/proto-hold/run",
      {
        payload: {},
      },
    );
    await worker.nextPush((p) => p.body.execution_id === execution_id);
    expect(await status(sys, execution_id)).toBe("running");
    // A pushed run going on for a moment shows as running in its trace, as an in-cluster one does.
    await eventually(async () => {
      const trace = await sys.client
        .request<{ status: string | null }>("GET", `/traces/${execution_id.replaceAll("-", "")}`)
        .catch(() => null);
      return trace?.status === "running" ? true : undefined;
    });
    await sys.client.executions.cancel(execution_id);
    await eventually(async () =>
      worker.cancels.some((c) => c.executionId === execution_id) ? true : undefined,
    );
    expect(worker.cancels.find((c) => c.executionId === execution_id)?.workerId).toBe(worker.workerId);
    const confirm = await worker.call("POST", `/internal/executions/${execution_id}/confirm-cancellation`, {
      worker_id: worker.workerId,
    });
    expect(confirm.status).toBe(200);
    const late = await worker.call("POST", `/internal/executions/${execution_id}/steps`, {
      step_key: "late",
      outputs: 1,
      success: true,
    });
    expect(late.status).toBe(409);
    const complete = await worker.call("POST", `/internal/executions/${execution_id}/complete`, {
      result: 1,
      worker_id: worker.workerId,
    });
    expect(complete.status).toBe(409);
    expect(await status(sys, execution_id)).toBe("cancelled");
  });

  it("a confirm-cancellation nobody asked for hands the run back to its queue (the SDK's shutdown)", async () => {
    const { execution_id } = await sys.client.request<{ execution_id: string }>(
      "POST",
      "/workflows/proto-hold/run",
      {
        payload: {},
      },
    );
    await worker.nextPush((p) => p.body.execution_id === execution_id);
    const pushes = () => worker.pushes.filter((p) => p.body.execution_id === execution_id).length;
    expect(pushes()).toBe(1);
    const res = await worker.call("POST", `/internal/executions/${execution_id}/confirm-cancellation`, {
      worker_id: worker.workerId,
    });
    expect(res.status).toBe(200);
    await eventually(async () => (pushes() === 2 ? true : undefined));
    await sys.client.executions.cancel(execution_id);
  });

  it("the span id it reports is echoed in the next push", async () => {
    const { execution_id } = await sys.client.request<{ execution_id: string }>(
      "POST",
      "/workflows/proto-order/run",
      {
        payload: { total: 2 },
      },
    );
    await until(sys, execution_id, "suspended");
    const put = await worker.call("PUT", `/internal/executions/${execution_id}/otel-span-id`, {
      otel_span_id: "00f067aa0ba902b7",
    });
    expect(put.status).toBe(200);
    await publish(`workflow/proto-order/${execution_id}`, "resume_approve", { approved: true });
    const next = await worker.nextPush(
      (p) => p.body.execution_id === execution_id && p.body.otel_span_id !== null,
    );
    expect(next.body.otel_span_id).toBe("00f067aa0ba902b7");
    await sys.client.executions.cancel(execution_id);
  });

  it("keeps a session's memory", async () => {
    const session = `s-${randomUUID()}`;
    const path = `/internal/session/${session}/memory`;
    expect(await (await worker.call("GET", path)).json()).toEqual({ summary: null, messages: [] });
    const memory = { summary: "likes tea", messages: [{ role: "user", content: "hi" }] };
    expect((await worker.call("PUT", path, memory)).status).toBe(200);
    expect(await (await worker.call("GET", path)).json()).toEqual(memory);
  });

  it("accepts spans with null fields and an unknown span type", async () => {
    const traceId = randomUUID().replaceAll("-", "");
    const res = await worker.call("POST", "/internal/spans/batch", {
      spans: [
        {
          trace_id: traceId,
          span_id: "1a2b3c4d5e6f7a8b",
          parent_span_id: null,
          name: "workflow.proto-order",
          span_type: "workflow",
          attributes: null,
          events: null,
          input: null,
          output: null,
          error: null,
          initial_state: null,
          final_state: null,
          started_at: "2026-11-23T10:00:00.000Z",
          ended_at: null,
        },
        {
          trace_id: traceId,
          span_id: "1a2b3c4d5e6f7a8c",
          parent_span_id: "1a2b3c4d5e6f7a8b",
          name: "llm.call",
          span_type: "llm_generation",
          attributes: { "llm.model": "m", empty: null },
          events: [{ name: "start", timestamp: "2026-11-23T10:00:00.100Z", attributes: null }],
          input: { messages: [] },
          output: null,
          error: { message: "rate limited", error_type: "Error" },
          initial_state: { a: 1 },
          final_state: null,
          started_at: "2026-11-23T10:00:00.100Z",
          ended_at: "2026-11-23T10:00:00.400Z",
        },
      ],
    });
    expect(res.status).toBe(200);
    const trace = await sys.client.request<{
      spans: { span_type: string; attributes: Record<string, unknown> }[];
    }>("GET", `/traces/${traceId}`);
    expect(trace.spans.map((s) => s.span_type)).toEqual(["workflow", "custom"]);
    expect(trace.spans[1]!.attributes).toMatchObject({ "llm.model": "m", initial_state: { a: 1 } });
  });

  it("a /wait or confirm-cancellation made again after its answer was lost is accepted and changes nothing", async () => {
    const { execution_id } = await sys.client.request<{ execution_id: string }>(
      "POST",
      "/workflows/proto-hold/run",
      {
        payload: {},
      },
    );
    await worker.nextPush((p) => p.body.execution_id === execution_id);
    const wait = {
      step_key: "later",
      wait_type: "time",
      wait_until: new Date(Date.now() + 60_000).toISOString(),
    };
    const path = `/internal/executions/${execution_id}`;
    // One stored step read back alone; one not stored yet is 404 (the SDK reads that as "run it").
    await worker.call("POST", `${path}/steps`, { step_key: "first", outputs: { n: 1 }, success: true });
    const one = await worker.call("GET", `${path}/steps/first`);
    expect(await one.json()).toMatchObject({ step_key: "first", outputs: { n: 1 }, success: true });
    expect((await worker.call("GET", `${path}/steps/not-yet`)).status).toBe(404);
    expect((await worker.call("POST", `${path}/wait`, wait)).status).toBe(200);
    expect((await worker.call("POST", `${path}/wait`, wait)).status).toBe(200);
    expect(await status(sys, execution_id)).toBe("waiting");
    await sys.client.executions.cancel(execution_id);
    for (let i = 0; i < 2; i++) {
      const res = await worker.call("POST", `${path}/confirm-cancellation`, { worker_id: worker.workerId });
      expect(res.status).toBe(200);
    }
    expect(await status(sys, execution_id)).toBe("cancelled");
  });

  it("only the run's own worker touches it: another project gets 404, another worker 409, nothing changes", async () => {
    const { execution_id } = await sys.client.request<{ execution_id: string }>(
      "POST",
      "/workflows/proto-hold/run",
      {
        payload: {},
      },
    );
    const push = await worker.nextPush((p) => p.body.execution_id === execution_id);
    const otherProject = await sys.engine.projects.create({ name: "other" });
    const other = {
      projectId: otherProject.id,
      key: (await sys.engine.projects.createApiKey(otherProject.id, "k")).key,
    };
    const asOther = (method: string, body?: unknown) =>
      fetch(`${sys.apiUrl}/internal/executions/${execution_id}/steps`, {
        method,
        headers: {
          authorization: `Bearer ${other.key}`,
          "x-project-id": other.projectId,
          "content-type": "application/json",
          // Even with the push's own claim: the run is not the other project's.
          "x-spool-claim": String((push.body as { spool_claim?: string }).spool_claim),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    expect((await asOther("GET")).status).toBe(404);
    expect((await asOther("POST", { step_key: "x", outputs: 1, success: true })).status).toBe(404);
    // A caller that does not say which worker it is gets 400.
    const anonymous = await worker.call("GET", `/internal/executions/${execution_id}/steps`, undefined, "");
    expect(anonymous.status).toBe(400);
    const stranger = randomUUID();
    const step = await worker.call(
      "POST",
      `/internal/executions/${execution_id}/steps`,
      { step_key: "x", outputs: 1, success: false, error: { message: "no" } },
      stranger,
    );
    expect(step.status).toBe(409);
    const done = await worker.call(
      "POST",
      `/internal/executions/${execution_id}/complete`,
      { result: 1, worker_id: stranger },
      stranger,
    );
    expect(done.status).toBe(409);
    expect(await status(sys, execution_id)).toBe("running");
    expect(await sys.client.executions.steps(execution_id)).toEqual([]);
    await sys.client.executions.cancel(execution_id);
  });

  it("an in-cluster run is off limits to the worker routes", async () => {
    const inCluster = await sys.startWorker();
    const { execution_id } = await sys.client.run("crashable", {});
    await until(sys, execution_id, "running");
    const res = await worker.call("GET", `/internal/executions/${execution_id}/steps`);
    expect(res.status).toBe(409);
    await sys.client.executions.cancel(execution_id);
    await inCluster.kill("SIGKILL");
  });

  it("after it is written off, it is told to re-register; its new id receives pushes and may finish older runs", async () => {
    const { execution_id: older } = await sys.client.request<{ execution_id: string }>(
      "POST",
      "/workflows/proto-hold/run",
      { payload: {} },
    );
    await worker.nextPush((p) => p.body.execution_id === older);
    await worker.call("POST", `/api/v1/workers/${worker.workerId}/deregister`);
    expect(await worker.heartbeat()).toEqual({ re_register: true });
    // While its only worker is away, a run of its workflow waits for it (it is not failed).
    const { execution_id: meanwhile } = await sys.client.request<{ execution_id: string }>(
      "POST",
      "/workflows/proto-child/run",
      { payload: { n: 10 } },
    );
    const oldId = worker.workerId;
    await worker.register(["proto-child", "proto-hold"].map((id) => ({ id })));
    expect(worker.workerId).not.toBe(oldId);
    // Pushed to the old id, completed under the new one (same push endpoint): accepted.
    const finished = await worker.call("POST", `/internal/executions/${older}/complete`, {
      result: "finished after re-registering",
      worker_id: worker.workerId,
    });
    expect(finished.status).toBe(200);
    expect((await sys.client.executions.get(older)).result).toBe("finished after re-registering");
    const { execution_id } = await sys.client.request<{ execution_id: string }>(
      "POST",
      "/workflows/proto-child/run",
      {
        payload: { n: 4 },
      },
    );
    const push = await worker.nextPush((p) => p.body.execution_id === execution_id);
    expect(push.body.worker_id).toBe(worker.workerId);
    expect((await sys.client.executions.waitForResult(execution_id)).result).toEqual({ doubled: 8 });
    const waited = await sys.client.executions.waitForResult(meanwhile, { timeoutMs: 20_000 });
    expect(waited).toMatchObject({ status: "completed", result: { doubled: 20 } });
  });
});
