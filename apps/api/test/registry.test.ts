import { beforeAll, describe, expect, it } from "vitest";
import { createTestApi, expectError } from "./harness.js";

const api = createTestApi();

describe("deployments, workflows, queues", () => {
  let p: { projectId: string; key: string };
  const call = (path: string, init: { method?: string; json?: unknown } = {}) =>
    api.request(path, { ...init, key: p.key, projectId: p.projectId });

  beforeAll(async () => {
    p = await api.createProject();
  });

  it("registers a deployment and its workflows (single and batch) as upserts", async () => {
    const d = await call("/api/v1/workers/deployments", { method: "POST", json: { deployment_id: "v1" } });
    expect(await d.json()).toEqual({ deployment_id: "v1", status: "active" });

    const one = await call("/api/v1/workers/deployments/v1/workflows", {
      method: "POST",
      json: { workflow_id: "orders", queue_name: "orders-q" },
    });
    expect(one.status).toBe(200);
    const batch = await call("/api/v1/workers/deployments/v1/workflows", {
      method: "POST",
      json: {
        workflows: [
          { workflow_id: "orders", queue_name: "orders-q2" },
          { workflow_id: "digest", workflow_type: "workflow", scheduled: true, trigger_on_event: true },
        ],
      },
    });
    expect(batch.status).toBe(200);

    const list = (await (await call("/api/v1/workflows")).json()) as { workflows: Record<string, unknown>[] };
    expect(list.workflows.map((w) => w.workflow_id)).toEqual(["digest", "orders"]);
    expect(list.workflows[1]).toMatchObject({
      deployment_id: "v1",
      queue_name: "orders-q2",
      workflow_type: "workflow",
    });
    expect(list.workflows[0]).toMatchObject({ scheduled: true, trigger_on_event: true });

    const got = await call("/api/v1/workflows/orders");
    expect(await got.json()).toMatchObject({ workflow_id: "orders", deployment_id: "v1" });

    const dep = (await (await call("/api/v1/deployments/v1")).json()) as { id: string; workflows: unknown[] };
    expect(dep.id).toBe("v1");
    expect(dep.workflows).toHaveLength(2);
    const deps = (await (await call("/api/v1/deployments")).json()) as { deployments: { id: string }[] };
    expect(deps.deployments.map((x) => x.id)).toEqual(["v1"]);
  });

  it("the latest deployment wins unless deployment_id is given", async () => {
    await call("/api/v1/workers/deployments", { method: "POST", json: { deployment_id: "v2" } });
    await call("/api/v1/workers/deployments/v2/workflows", {
      method: "POST",
      json: { workflow_id: "orders" },
    });
    expect(await (await call("/api/v1/workflows/orders")).json()).toMatchObject({ deployment_id: "v2" });
    expect(await (await call("/api/v1/workflows/orders?deployment_id=v1")).json()).toMatchObject({
      deployment_id: "v1",
    });
  });

  it("404 for unknown deployments and workflows; 400 for invalid ids", async () => {
    await expectError(
      await call("/api/v1/workers/deployments/nope/workflows", {
        method: "POST",
        json: { workflow_id: "x" },
      }),
      404,
      "NOT_FOUND",
    );
    await expectError(await call("/api/v1/deployments/nope"), 404, "NOT_FOUND");
    await expectError(await call("/api/v1/workflows/nope"), 404, "NOT_FOUND");
    await expectError(
      await call("/api/v1/workers/queues", {
        method: "POST",
        json: { deployment_id: "nope", queues: [{ name: "q" }] },
      }),
      404,
      "NOT_FOUND",
    );
    const bad = await expectError(
      await call("/api/v1/workers/deployments", { method: "POST", json: { deployment_id: "has space" } }),
      400,
      "INVALID_INPUT",
    );
    expect(JSON.stringify(bad.details)).toContain("deployment_id");
    await expectError(
      await call("/api/v1/workers/deployments/v1/workflows", {
        method: "POST",
        json: { workflow_id: "x", workflow_type: "robot" },
      }),
      400,
      "INVALID_INPUT",
    );
  });

  it("registers queues with concurrency limits", async () => {
    const res = await call("/api/v1/workers/queues", {
      method: "POST",
      json: { deployment_id: "v1", queues: [{ name: "orders-q", concurrency_limit: 2 }, { name: "bulk" }] },
    });
    expect(await res.json()).toEqual({
      queues: [
        { name: "orders-q", concurrency_limit: 2 },
        { name: "bulk", concurrency_limit: null },
      ],
    });
    await expectError(
      await call("/api/v1/workers/queues", {
        method: "POST",
        json: { deployment_id: "v1", queues: [{ name: "q", concurrency_limit: 0 }] },
      }),
      400,
      "INVALID_INPUT",
    );
  });

  it("another project sees none of it", async () => {
    const other = await api.createProject();
    const as = (path: string) => api.request(path, { key: other.key, projectId: other.projectId });
    expect(await (await as("/api/v1/workflows")).json()).toEqual({ workflows: [], next_cursor: null });
    expect(await (await as("/api/v1/deployments")).json()).toEqual({ deployments: [], next_cursor: null });
    await expectError(await as("/api/v1/workflows/orders"), 404, "NOT_FOUND");
    await expectError(await as("/api/v1/deployments/v1"), 404, "NOT_FOUND");
  });
});

describe("agents and tools", () => {
  it("register into the latest deployment, read back, and run as workflows", async () => {
    const p = await api.createProject();
    const call = (path: string, init: { method?: string; json?: unknown } = {}) =>
      api.request(path, { ...init, key: p.key, projectId: p.projectId });

    await expectError(
      await call("/api/v1/agents/register", {
        method: "POST",
        json: { id: "a", provider: "openai", model: "m" },
      }),
      400,
      "BAD_REQUEST",
    );
    await call("/api/v1/workers/deployments", { method: "POST", json: { deployment_id: "d1" } });
    const reg = await call("/api/v1/agents/register", {
      method: "POST",
      json: {
        id: "researcher",
        provider: "openai",
        model: "gpt-x",
        system_prompt: "be brief",
        tools: ["search"],
        temperature: 0.2,
        max_output_tokens: 500,
      },
    });
    expect(await reg.json()).toEqual({ success: true });
    const tool = await call("/api/v1/tools/register", {
      method: "POST",
      json: {
        id: "search",
        description: "web search",
        parameters: { type: "object", properties: { q: { type: "string" } } },
      },
    });
    expect(tool.status).toBe(200);

    expect(await (await call("/api/v1/agents/researcher")).json()).toMatchObject({
      id: "researcher",
      deployment_id: "d1",
      model: "gpt-x",
      system_prompt: "be brief",
      tools: ["search"],
      temperature: 0.2,
      max_output_tokens: 500,
    });
    const tools = (await (await call("/api/v1/tools")).json()) as { tools: Record<string, unknown>[] };
    expect(tools.tools).toHaveLength(1);
    expect(tools.tools[0]).toMatchObject({
      id: "search",
      tool_type: "default",
      parameters: { type: "object" },
    });
    const agents = (await (await call("/api/v1/agents")).json()) as { agents: unknown[] };
    expect(agents.agents).toHaveLength(1);

    const wf = (await (await call("/api/v1/workflows")).json()) as {
      workflows: { workflow_id: string; workflow_type: string }[];
    };
    expect(wf.workflows).toEqual([
      expect.objectContaining({ workflow_id: "researcher", workflow_type: "agent" }),
      expect.objectContaining({ workflow_id: "search", workflow_type: "tool" }),
    ]);

    await expectError(await call("/api/v1/agents/nope"), 404, "NOT_FOUND");
    await expectError(await call("/api/v1/tools/nope"), 404, "NOT_FOUND");
    await expectError(
      await call("/api/v1/tools/register", { method: "POST", json: { id: "x", deployment_id: "missing" } }),
      404,
      "NOT_FOUND",
    );
    await expectError(
      await call("/api/v1/agents/register", {
        method: "POST",
        json: { id: "x", provider: "openai", model: "m", temperature: 9 },
      }),
      400,
      "INVALID_INPUT",
    );
  });

  it("another project sees none of a project's agents and tools; concurrent registrations all succeed", async () => {
    const p = await api.createProject();
    const call = (path: string, init: { method?: string; json?: unknown } = {}) =>
      api.request(path, { ...init, key: p.key, projectId: p.projectId });
    await call("/api/v1/workers/deployments", { method: "POST", json: { deployment_id: "d1" } });
    // Several workers of one deployment start at once and register the same agent and tool.
    const registrations = await Promise.all(
      Array.from({ length: 8 }, (_, i) => [
        call("/api/v1/agents/register", {
          method: "POST",
          json: { id: "shared-agent", provider: "openai", model: `m-${i}` },
        }),
        call("/api/v1/tools/register", { method: "POST", json: { id: "shared-tool", description: `v${i}` } }),
      ]).flat(),
    );
    expect(registrations.map((r) => r.status)).toEqual(registrations.map(() => 200));

    const other = await api.createProject();
    const as = (path: string) => api.request(path, { key: other.key, projectId: other.projectId });
    expect(((await (await as("/api/v1/agents")).json()) as { agents: unknown[] }).agents).toEqual([]);
    expect(((await (await as("/api/v1/tools")).json()) as { tools: unknown[] }).tools).toEqual([]);
    await expectError(await as("/api/v1/agents/shared-agent"), 404, "NOT_FOUND");
    await expectError(await as("/api/v1/tools/shared-tool"), 404, "NOT_FOUND");
    expect((await (await call("/api/v1/agents/shared-agent")).json()) as { id: string }).toMatchObject({
      id: "shared-agent",
    });
  });
});

describe("workers of one deployment starting together", () => {
  it("all register the deployment, its workflows and queues, and themselves, without an error", async () => {
    // Rounds of fresh projects: each round's first inserts race (a 500 from a unique violation before).
    for (let round = 0; round < 10; round++) {
      const p = await api.createProject();
      const post = async (path: string, json: unknown) =>
        (await api.request(path, { method: "POST", json, key: p.key, projectId: p.projectId })).status;
      const startWorker = async () => [
        await post("/api/v1/workers/deployments", { deployment_id: "d1" }),
        await post("/api/v1/workers/deployments/d1/workflows", {
          workflows: [
            { workflow_id: "a", queue_name: "default" },
            { workflow_id: "b", queue_name: "limited" },
          ],
        }),
        await post("/api/v1/workers/queues", {
          deployment_id: "d1",
          queues: [{ name: "default" }, { name: "limited", concurrency_limit: 2 }],
        }),
        // A worker registering itself creates its deployment when it has none yet.
        await post("/api/v1/workers/register", { deployment_id: "d2", mode: "queue" }),
      ];
      const statuses = (await Promise.all(Array.from({ length: 4 }, startWorker))).flat();
      expect(statuses.filter((s) => s !== 200 && s !== 201)).toEqual([]);
    }
  });
});

describe("archiving what no worker serves any more", () => {
  it("a workflow: 409 while it has runs not finished; then gone from lists and runs, its trigger and schedule paused", async () => {
    const p = await api.createProject();
    const call = (path: string, init: { method?: string; json?: unknown } = {}) =>
      api.request(path, { ...init, key: p.key, projectId: p.projectId });
    const json = async <T>(res: Promise<Response>) => (await (await res).json()) as T;
    await call("/api/v1/workers/deployments", { method: "POST", json: { deployment_id: "d1" } });
    const register = () =>
      call("/api/v1/workers/deployments/d1/workflows", {
        method: "POST",
        json: { workflows: [{ workflow_id: "old" }, { workflow_id: "keep" }] },
      });
    await register();
    const trigger = await json<{ trigger: { id: string } }>(
      call("/api/v1/event-triggers/register", {
        method: "POST",
        json: { workflow_id: "old", deployment_id: "d1", event_topic: "t", batch_size: 5 },
      }),
    );
    const schedule = await json<{ schedule_id: string }>(
      call("/api/v1/schedules", { method: "POST", json: { workflow_id: "old", cron: "0 9 * * *" } }),
    );
    const { execution_id } = await json<{ execution_id: string }>(
      call("/api/v1/workflows/old/run", { method: "POST", json: { input: {} } }),
    );

    // A worker of its deployment is online: it would register it again at its next start.
    const worker = await json<{ worker_id: string }>(
      call("/api/v1/workers/register", { method: "POST", json: { deployment_id: "d1", mode: "queue" } }),
    );
    const served = await expectError(
      await call("/api/v1/workflows/old", { method: "DELETE" }),
      409,
      "CONFLICT",
    );
    expect(served).toMatchObject({ details: { online_workers: 1 } });
    await call(`/api/v1/workers/${worker.worker_id}/deregister`, { method: "POST" });

    const refused = await expectError(
      await call("/api/v1/workflows/old", { method: "DELETE" }),
      409,
      "CONFLICT",
    );
    expect(refused).toMatchObject({ details: { active_runs: 1 } });
    // Refused, it changed nothing.
    expect((await call("/api/v1/workflows/old")).status).toBe(200);
    await call(`/api/v1/executions/${execution_id}/cancel`, { method: "POST" });
    expect((await call("/api/v1/workflows/old", { method: "DELETE" })).status).toBe(204);

    const listed = await json<{ workflows: { workflow_id: string }[] }>(call("/api/v1/workflows"));
    expect(listed.workflows.map((w) => w.workflow_id)).toEqual(["keep"]);
    await expectError(await call("/api/v1/workflows/old"), 404, "NOT_FOUND");
    await expectError(
      await call("/api/v1/workflows/old/run", { method: "POST", json: { input: {} } }),
      404,
      "NOT_FOUND",
    );
    await expectError(await call("/api/v1/workflows/old", { method: "DELETE" }), 404, "NOT_FOUND");
    const { triggers } = await json<{ triggers: { id: string; status: string }[] }>(
      call("/api/v1/event-triggers"),
    );
    expect(triggers.find((t) => t.id === trigger.trigger.id)).toMatchObject({ status: "paused" });
    expect(await json<{ status: string }>(call(`/api/v1/schedules/${schedule.schedule_id}`))).toMatchObject({
      status: "paused",
    });

    // A worker registering it again brings it back.
    await register();
    expect((await call("/api/v1/workflows/old/run", { method: "POST", json: { input: {} } })).status).toBe(
      202,
    );
  });

  it("a deployment: gone from the list with its workflows; only a worker or admin key may archive", async () => {
    const p = await api.createProject();
    const call = (path: string, init: { method?: string; json?: unknown; key?: string } = {}) =>
      api.request(path, { ...init, key: init.key ?? p.key, projectId: p.projectId });
    for (const deployment_id of ["v1", "v2"]) {
      await call("/api/v1/workers/deployments", { method: "POST", json: { deployment_id } });
      await call(`/api/v1/workers/deployments/${deployment_id}/workflows`, {
        method: "POST",
        json: { workflows: [{ workflow_id: `only-in-${deployment_id}` }] },
      });
    }
    const client = (await (
      await api.request(`/api/v1/projects/${p.projectId}/api-keys`, {
        method: "POST",
        key: api.adminKey,
        json: { name: "dashboard", scope: "client" },
      })
    ).json()) as { key: string };
    await expectError(
      await call("/api/v1/deployments/v1", { method: "DELETE", key: client.key }),
      403,
      "FORBIDDEN",
    );

    expect((await call("/api/v1/deployments/v1", { method: "DELETE" })).status).toBe(204);
    const { deployments } = (await (await call("/api/v1/deployments")).json()) as {
      deployments: { id: string }[];
    };
    expect(deployments.map((d) => d.id)).toEqual(["v2"]);
    await expectError(
      await call("/api/v1/workflows/only-in-v1/run", { method: "POST", json: { input: {} } }),
      404,
      "NOT_FOUND",
    );
    expect(
      (await call("/api/v1/workflows/only-in-v2/run", { method: "POST", json: { input: {} } })).status,
    ).toBe(202);
    await expectError(await call("/api/v1/deployments/v1", { method: "DELETE" }), 404, "NOT_FOUND");
  });
});
