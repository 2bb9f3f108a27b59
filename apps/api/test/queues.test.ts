// Queues as a user sees them: a run nobody can take says why and since when, the list filters by
// that, and GET /queues shows each lane's limit, what waits, what runs and who can take its runs.
import { describe, expect, it } from "vitest";
import { createTestApi, expectError } from "./harness.js";

const api = createTestApi();

interface Blocked {
  reason: string;
  message: string;
  since: string;
}
interface Run {
  id: string;
  status: string;
  queue_name: string;
  blocked: Blocked | null;
}
interface QueueState {
  name: string;
  concurrency_limit: number | null;
  queued: number;
  running: number;
  waiting_for_slot: number;
  consumers: number;
}

async function projectWithWorkflow() {
  const p = await api.createProject();
  const call = async <T>(path: string, init: { method?: string; json?: unknown } = {}) => {
    const res = await api.request(path, { ...init, key: p.key, projectId: p.projectId });
    expect(res.status, `${init.method ?? "GET"} ${path}`).toBeLessThan(300);
    return (await res.json()) as T;
  };
  await call("/api/v1/workers/deployments", { method: "POST", json: { deployment_id: "d1" } });
  await call("/api/v1/workers/deployments/d1/workflows", {
    method: "POST",
    json: { workflows: [{ workflow_id: "report", queue_name: "default" }] },
  });
  const run = (body: Record<string, unknown> = {}) =>
    call<{ execution_id: string }>("/api/v1/workflows/report/run", {
      method: "POST",
      json: { input: {}, ...body },
    });
  return { p, call, run };
}

describe("a run nobody can take", () => {
  it("says so (why, since when) until a worker that serves its workflow is online; the list filters by it", async () => {
    const { call, run } = await projectWithWorkflow();
    const before = Date.now();
    const { execution_id } = await run({ queue_name: "reports" });

    const stuck = await call<Run>(`/api/v1/executions/${execution_id}`);
    expect(stuck).toMatchObject({ status: "queued", queue_name: "reports" });
    expect(stuck.blocked).toMatchObject({
      reason: "no_worker",
      message: "no online worker serves workflow 'report'; none has registered it",
    });
    expect(Date.parse(stuck.blocked!.since)).toBeGreaterThanOrEqual(before - 1000);
    const listed = (blocked: string) =>
      call<{ executions: Run[] }>(`/api/v1/executions?blocked=${blocked}`).then((r) =>
        r.executions.map((e) => e.id),
      );
    expect(await listed("no_worker")).toEqual([execution_id]);
    expect(await listed("concurrency_limit")).toEqual([]);

    // A worker that serves it comes online: nothing blocks the run any more.
    await call("/api/v1/workers/register", {
      method: "POST",
      json: { deployment_id: "d1", mode: "queue", capabilities: { workflow_ids: ["report"] } },
    });
    expect((await call<Run>(`/api/v1/executions/${execution_id}`)).blocked).toBeNull();
    expect(await listed("no_worker")).toEqual([]);
  });

  it("a bad filter is a 400", async () => {
    const { p } = await projectWithWorkflow();
    await expectError(
      await api.request("/api/v1/executions?blocked=sometimes", { key: p.key, projectId: p.projectId }),
      400,
      "INVALID_INPUT",
    );
  });
});

describe("GET /queues", () => {
  it("lists each lane with its limit, queued, running, runs waiting for a slot, and consumers", async () => {
    const { p, call, run } = await projectWithWorkflow();
    await call("/api/v1/workers/register", {
      method: "POST",
      json: { deployment_id: "d1", mode: "queue", capabilities: { workflow_ids: ["report"] } },
    });
    await call("/api/v1/workers/queues", {
      method: "POST",
      json: { deployment_id: "d1", queues: [{ name: "default" }, { name: "nightly", concurrency_limit: 1 }] },
    });
    const ids = [
      (await run({ queue_name: "nightly", concurrency_key: "acme" })).execution_id,
      (await run({ queue_name: "nightly", concurrency_key: "acme" })).execution_id,
      (await run()).execution_id,
    ];
    // A worker picks up both nightly runs: one starts, the other waits for the slot.
    const started = await Promise.all(ids.slice(0, 2).map((id) => api.engine.executions.start(id, 0, null)));
    expect(started.map((s) => s.status).sort()).toEqual(["slot_wait", "started"]);
    const waiting = ids[started.findIndex((s) => s.status === "slot_wait")]!;
    expect((await call<Run>(`/api/v1/executions/${waiting}`)).blocked).toMatchObject({
      reason: "concurrency_limit",
      message:
        "queue 'nightly' is at its concurrency limit for concurrency key 'acme'; the run starts when a run of it ends",
    });

    const { queues, next_cursor } = await call<{ queues: QueueState[]; next_cursor: string | null }>(
      "/api/v1/queues",
    );
    expect(next_cursor).toBeNull();
    expect(queues).toEqual([
      { name: "default", concurrency_limit: null, queued: 1, running: 0, waiting_for_slot: 0, consumers: 1 },
      { name: "nightly", concurrency_limit: 1, queued: 1, running: 1, waiting_for_slot: 1, consumers: 1 },
    ]);
    // Paged by name.
    const first = await call<{ queues: QueueState[]; next_cursor: string }>("/api/v1/queues?limit=1");
    expect(first.queues.map((q) => q.name)).toEqual(["default"]);
    const second = await call<{ queues: QueueState[] }>(`/api/v1/queues?limit=1&cursor=${first.next_cursor}`);
    expect(second.queues.map((q) => q.name)).toEqual(["nightly"]);
    // Another project sees none of them.
    const other = await api.createProject();
    const res = await api.request("/api/v1/queues", { key: other.key, projectId: other.projectId });
    expect(((await res.json()) as { queues: unknown[] }).queues).toEqual([]);
    expect(p.projectId).not.toBe(other.projectId);
  });
});
