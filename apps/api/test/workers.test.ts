import { beforeAll, describe, expect, it } from "vitest";
import { createTestApi, expectError } from "./harness.js";

const api = createTestApi();

describe("workers", () => {
  let p: { projectId: string; key: string };
  const call = (path: string, init: { method?: string; json?: unknown } = {}) =>
    api.request(path, { ...init, key: p.key, projectId: p.projectId });

  beforeAll(async () => {
    p = await api.createProject();
    await call("/api/v1/workers/deployments", { method: "POST", json: { deployment_id: "d1" } });
  });

  it("register, heartbeat, list, get, status, active, deregister, online", async () => {
    const reg = await call("/api/v1/workers/register", {
      method: "POST",
      json: {
        deployment_id: "d1",
        mode: "queue",
        capabilities: { runtime: "node", workflow_ids: ["w1"], queues: ["default"] },
        max_concurrent_executions: 8,
        hostname: "box-1",
      },
    });
    expect(reg.status).toBe(200);
    const { worker_id, heartbeat_interval_seconds } = (await reg.json()) as {
      worker_id: string;
      heartbeat_interval_seconds: number;
    };
    expect(heartbeat_interval_seconds).toBe(5);

    const hb = await call(`/api/v1/workers/${worker_id}/heartbeat`, { method: "POST", json: { running: 3 } });
    expect(await hb.json()).toEqual({ re_register: false });
    const hbNoBody = await call(`/api/v1/workers/${worker_id}/heartbeat`, { method: "POST" });
    expect(await hbNoBody.json()).toEqual({ re_register: false });

    const got = (await (await call(`/api/v1/workers/${worker_id}`)).json()) as Record<string, unknown>;
    expect(got).toMatchObject({
      id: worker_id,
      deployment_id: "d1",
      mode: "queue",
      status: "online",
      running_executions: 3,
      max_concurrent_executions: 8,
      hostname: "box-1",
      capabilities: { runtime: "node", workflow_ids: ["w1"], queues: ["default"] },
    });

    expect(await (await call("/api/v1/workers/status?deployment_id=d1")).json()).toEqual({
      online_count: 1,
      has_workers: true,
    });
    expect(await (await call("/api/v1/workers/active")).json()).toEqual({ worker_ids: [worker_id] });
    const list = (await (await call("/api/v1/workers?status=online&deployment_id=d1")).json()) as {
      workers: { id: string }[];
    };
    expect(list.workers.map((w) => w.id)).toEqual([worker_id]);

    expect(await (await call(`/api/v1/workers/${worker_id}/deregister`, { method: "POST" })).json()).toEqual({
      worker_id,
      status: "offline",
    });
    expect(await (await call("/api/v1/workers/status?deployment_id=d1")).json()).toEqual({
      online_count: 0,
      has_workers: false,
    });
    // An offline worker is told to re-register.
    expect(
      await (await call(`/api/v1/workers/${worker_id}/heartbeat`, { method: "POST", json: {} })).json(),
    ).toEqual({ re_register: true });
    expect((await call(`/api/v1/workers/${worker_id}/online`, { method: "POST" })).status).toBe(200);
    expect(await (await call("/api/v1/workers/active")).json()).toEqual({ worker_ids: [worker_id] });
  });

  it("registering a worker creates its deployment; a push worker gets a push secret and a 30 s beat", async () => {
    const res = await call("/api/v1/workers/register", {
      method: "POST",
      json: { deployment_id: "made-by-a-worker", mode: "push", push_endpoint_url: "http://127.0.0.1:9/" },
    });
    const body = (await res.json()) as { heartbeat_interval_seconds: number; push_secret: string | null };
    expect(res.status).toBe(200);
    expect(body.heartbeat_interval_seconds).toBe(30);
    expect(body.push_secret).toMatch(/^[\w-]{43}$/);
    expect((await call("/api/v1/deployments/made-by-a-worker")).status).toBe(200);
  });

  it("rejects bad input and unknown ids, and hides other projects' workers", async () => {
    await expectError(
      await call("/api/v1/workers/register", {
        method: "POST",
        json: { deployment_id: "d1", mode: "teleport" },
      }),
      400,
      "INVALID_INPUT",
    );
    // A push worker must say where to push to.
    await expectError(
      await call("/api/v1/workers/register", { method: "POST", json: { deployment_id: "d1", mode: "push" } }),
      400,
      "BAD_REQUEST",
    );
    await expectError(await call("/api/v1/workers/not-a-uuid"), 404, "NOT_FOUND");
    await expectError(await call("/api/v1/workers/status"), 400, "INVALID_INPUT");
    await expectError(
      await call("/api/v1/workers/00000000-0000-4000-8000-000000000000/online", { method: "POST" }),
      404,
      "NOT_FOUND",
    );
    expect(
      await (
        await call("/api/v1/workers/00000000-0000-4000-8000-000000000000/heartbeat", {
          method: "POST",
          json: {},
        })
      ).json(),
    ).toEqual({ re_register: true });

    const reg = await call("/api/v1/workers/register", {
      method: "POST",
      json: { deployment_id: "d1", mode: "pull" },
    });
    const { worker_id } = (await reg.json()) as { worker_id: string };
    const other = await api.createProject();
    const as = (path: string, method = "GET") =>
      api.request(path, { method, key: other.key, projectId: other.projectId });
    await expectError(await as(`/api/v1/workers/${worker_id}`), 404, "NOT_FOUND");
    expect(await (await as(`/api/v1/workers/${worker_id}/heartbeat`, "POST")).json()).toEqual({
      re_register: true,
    });
    expect(await (await as("/api/v1/workers")).json()).toEqual({ workers: [], next_cursor: null });
  });
});
