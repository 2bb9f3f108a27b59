// The Executions routes over HTTP through the real app (no worker: runs stay queued unless a test
// moves them through the engine as a worker would).
import { claimOf } from "@spool/engine";
import { beforeAll, describe, expect, it } from "vitest";
import { createTestApi, expectError } from "./harness.js";

const api = createTestApi();

type Project = { projectId: string; key: string };

async function call(
  p: Project,
  path: string,
  init: { method?: string; json?: unknown; headers?: Record<string, string> } = {},
) {
  return api.request(path, { ...init, key: p.key, projectId: p.projectId });
}

async function registered(p: Project, ...workflowIds: string[]) {
  await call(p, "/api/v1/workers/deployments", { method: "POST", json: { deployment_id: "v1" } });
  await call(p, "/api/v1/workers/deployments/v1/workflows", {
    method: "POST",
    json: { workflows: workflowIds.map((workflow_id) => ({ workflow_id })) },
  });
}

async function run(
  p: Project,
  workflowId: string,
  body: unknown = { input: {} },
  headers?: Record<string, string>,
) {
  return call(p, `/api/v1/workflows/${workflowId}/run`, { method: "POST", json: body, headers });
}

async function executionCount(p: Project): Promise<number> {
  const res = await call(p, "/api/v1/executions?limit=500");
  return ((await res.json()) as { executions: unknown[] }).executions.length;
}

describe("executions over HTTP", () => {
  let a: Project;
  let b: Project;

  beforeAll(async () => {
    a = await api.createProject("a");
    b = await api.createProject("b");
    await registered(a, "wf", "other");
    await registered(b, "wf");
  });

  it("run answers 202 with the receipt; payload is accepted for input; an unknown workflow is 404", async () => {
    const res = await run(a, "wf", { payload: { n: 1 }, queue_name: "fast" });
    expect(res.status).toBe(202);
    const receipt = (await res.json()) as Record<string, unknown>;
    expect(receipt).toMatchObject({ workflow_id: "wf", status: "queued", queue_name: "fast" });
    const got = await (await call(a, `/api/v1/executions/${receipt.execution_id}`)).json();
    expect(got).toMatchObject({ id: receipt.execution_id, input: { n: 1 }, status: "queued", attempt: 1 });

    await expectError(await run(a, "nope"), 404, "NOT_FOUND");
    // Waiting for it changes nothing: still 404, at once, and nothing is created.
    const before = await executionCount(a);
    const waited = await call(a, "/api/v1/workflows/nope/run?wait=30", {
      method: "POST",
      json: { input: {} },
    });
    await expectError(waited, 404, "NOT_FOUND");
    expect(await executionCount(a)).toBe(before);
  });

  it("a repeated Idempotency-Key returns the first receipt and starts nothing; another body is 409", async () => {
    const key = { "Idempotency-Key": `order-${Date.now()}` };
    const before = await executionCount(a);
    const first = await run(a, "wf", { input: { order: 1 } }, key);
    const again = await run(a, "wf", { input: { order: 1 } }, key);
    expect(first.status).toBe(202);
    expect(again.status).toBe(202);
    expect(await again.json()).toEqual(await first.json());
    expect(await executionCount(a)).toBe(before + 1);

    await expectError(await run(a, "wf", { input: { order: 2 } }, key), 409, "CONFLICT");
    // Keys are per project: the same key in another project is a new run there.
    expect((await run(b, "wf", { input: { order: 1 } }, key)).status).toBe(202);
  });

  it("batch_run is all or nothing, receipts in request order", async () => {
    const before = await executionCount(a);
    const bad = await call(a, "/api/v1/workflows/batch_run", {
      method: "POST",
      json: {
        workflows: [
          { workflow_id: "wf", input: {} },
          { workflow_id: "missing", input: {} },
        ],
      },
    });
    await expectError(bad, 404, "NOT_FOUND");
    expect(await executionCount(a)).toBe(before);

    const ok = await call(a, "/api/v1/workflows/batch_run", {
      method: "POST",
      json: {
        workflows: [
          { workflow_id: "other", input: {} },
          { workflow_id: "wf", input: {} },
        ],
      },
    });
    expect(ok.status).toBe(202);
    const { executions } = (await ok.json()) as { executions: { workflow_id: string }[] };
    expect(executions.map((e) => e.workflow_id)).toEqual(["other", "wf"]);
  });

  it("another project's real execution id is 404 on get, steps, resume and cancel", async () => {
    const { execution_id } = (await (await run(a, "wf")).json()) as { execution_id: string };
    for (const [method, suffix, json] of [
      ["GET", "", undefined],
      ["GET", "/steps", undefined],
      ["POST", "/resume", { data: {} }],
      ["POST", "/cancel", undefined],
    ] as const) {
      await expectError(
        await call(b, `/api/v1/executions/${execution_id}${suffix}`, { method, json }),
        404,
        "NOT_FOUND",
      );
    }
    // Untouched by those attempts.
    expect(
      ((await (await call(a, `/api/v1/executions/${execution_id}`)).json()) as { status: string }).status,
    ).toBe("queued");
  });

  it("resume is 409 unless suspended; a suspended run resumes once (202), then 409", async () => {
    const { execution_id } = (await (await run(a, "wf")).json()) as { execution_id: string };
    await expectError(
      await call(a, `/api/v1/executions/${execution_id}/resume`, { method: "POST", json: { data: {} } }),
      409,
      "CONFLICT",
    );
    const started = await api.engine.executions.start(execution_id, 0, null);
    if (started.status !== "started") throw new Error("the run did not start");
    await api.engine.executions.block({
      executionId: execution_id,
      claim: claimOf(started.execution),
      waits: [{ stepKey: "ok?", seq: 1, kind: "suspend", wakeAt: null, payload: { amount: 5 } }],
    });
    const suspended = (await (await call(a, `/api/v1/executions/${execution_id}`)).json()) as Record<
      string,
      unknown
    >;
    expect(suspended).toMatchObject({
      status: "suspended",
      suspended_step_key: "ok?",
      suspended_data: { amount: 5 },
    });

    const resumed = await call(a, `/api/v1/executions/${execution_id}/resume`, {
      method: "POST",
      json: { data: { approved: true } },
    });
    expect(resumed.status).toBe(202);
    expect(await resumed.json()).toEqual({ execution_id, status: "queued" });
    await expectError(
      await call(a, `/api/v1/executions/${execution_id}/resume`, { method: "POST", json: { data: {} } }),
      409,
      "CONFLICT",
    );
  });

  it("?wait=&until=blocked answers once the run waits (200); until=terminal keeps waiting (202 at the end)", async () => {
    const { execution_id } = (await (await run(a, "wf")).json()) as { execution_id: string };
    const waitFor = (query: string) => call(a, `/api/v1/executions/${execution_id}?${query}`);
    // Still queued: nothing to answer before the wait runs out, whatever `until`.
    const early = await waitFor("wait=0.2&until=blocked");
    expect(early.status).toBe(202);
    expect(((await early.json()) as { status: string }).status).toBe("queued");

    const blocked = waitFor("wait=30&until=blocked");
    const started = await api.engine.executions.start(execution_id, 0, null);
    if (started.status !== "started") throw new Error("the run did not start");
    await api.engine.executions.block({
      executionId: execution_id,
      claim: claimOf(started.execution),
      waits: [{ stepKey: "nap", seq: 1, kind: "sleep", wakeAt: new Date(Date.now() + 60_000) }],
    });
    const answered = await blocked;
    expect(answered.status).toBe(200);
    expect(((await answered.json()) as { status: string }).status).toBe("waiting");

    const terminal = await waitFor("wait=0.3");
    expect(terminal.status).toBe(202);
    await expectError(await waitFor("wait=1&until=soon"), 400, "INVALID_INPUT");
  });

  it("a waiting run's steps list what it waits for: a sleep until when, an event's topic, a child run", async () => {
    const { execution_id } = (await (await run(a, "wf")).json()) as { execution_id: string };
    const started = await api.engine.executions.start(execution_id, 0, null);
    if (started.status !== "started") throw new Error("the run did not start");
    const claim = claimOf(started.execution);
    const wakeAt = new Date(Date.now() + 3_600_000);
    const expiresAt = new Date(Date.now() + 86_400_000);
    await api.engine.executions.block({
      executionId: execution_id,
      claim,
      waits: [
        { stepKey: "nap", seq: 1, kind: "sleep", wakeAt },
        { stepKey: "paid", seq: 2, kind: "event", wakeAt: expiresAt, topic: "payments", afterSequence: 0n },
        { stepKey: "sub", seq: 3, kind: "invoke", wakeAt: null, child: { workflowId: "other", input: {} } },
      ],
    });
    const child = await api.engine.prisma.execution.findFirstOrThrow({
      where: { parentExecutionId: execution_id },
    });
    const res = await call(a, `/api/v1/executions/${execution_id}/steps`);
    expect(res.status).toBe(200);
    const { steps } = (await res.json()) as { steps: Record<string, unknown>[] };
    const pending = { status: "pending", output: null, error: null, completed_at: null };
    expect(steps).toMatchObject([
      {
        step_key: "nap",
        kind: "sleep",
        ...pending,
        wake_at: wakeAt.toISOString(),
        expires_at: null,
        topic: null,
      },
      {
        step_key: "paid",
        kind: "event",
        ...pending,
        wake_at: null,
        expires_at: expiresAt.toISOString(),
        topic: "payments",
      },
      { step_key: "sub", kind: "invoke", ...pending, expires_at: null, child_execution_id: child.id },
    ]);
  });

  it("cancel answers 200 with cancelled_at, then 409 once terminal", async () => {
    const { execution_id } = (await (await run(a, "wf")).json()) as { execution_id: string };
    const res = await call(a, `/api/v1/executions/${execution_id}/cancel`, { method: "POST" });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      execution_id,
      status: "cancelled",
      cancelled_at: expect.any(String),
    });
    await expectError(
      await call(a, `/api/v1/executions/${execution_id}/cancel`, { method: "POST" }),
      409,
      "CONFLICT",
    );
  });

  it("lists newest first with filters and cursor paging", async () => {
    const p = await api.createProject("list");
    await registered(p, "wf", "other");
    const ids: string[] = [];
    for (const w of ["wf", "other", "wf", "wf"]) {
      ids.push(((await (await run(p, w)).json()) as { execution_id: string }).execution_id);
    }
    const page = async (q: string) =>
      (await (await call(p, `/api/v1/executions${q}`)).json()) as {
        executions: { id: string }[];
        next_cursor: string | null;
      };
    const first = await page("?workflow_id=wf&limit=2");
    expect(first.executions.map((e) => e.id)).toEqual([ids[3], ids[2]]);
    const second = await page(`?workflow_id=wf&limit=2&cursor=${first.next_cursor}`);
    expect(second.executions.map((e) => e.id)).toEqual([ids[0]]);
    expect(second.next_cursor).toBeNull();
    expect((await page("?status=queued")).executions).toHaveLength(4);
    expect((await page("?status=completed")).executions).toHaveLength(0);
    await expectError(await call(p, "/api/v1/executions?status=exploded"), 400, "INVALID_INPUT");
  });
});
