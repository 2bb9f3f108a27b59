// What a key may do follows its scope: a leaked client key cannot take work as a worker, a worker's
// key cannot start or read runs, and only the admin key or an admin-scoped key manages keys.
import { beforeAll, describe, expect, it } from "vitest";
import { createTestApi, expectError } from "./harness.js";

const api = createTestApi();

describe("key scopes", () => {
  let projectId: string;
  const keys: Record<"admin" | "worker" | "client" | "legacy", { id: string; key: string }> = {} as never;

  beforeAll(async () => {
    ({ projectId } = await api.createProject());
    for (const scope of ["admin", "worker", "client", "legacy"] as const) {
      const res = await api.request(`/api/v1/projects/${projectId}/api-keys`, {
        method: "POST",
        key: api.adminKey,
        json: scope === "legacy" ? { name: scope } : { name: scope, scope },
      });
      expect(res.status).toBe(201);
      const body = (await res.json()) as { id: string; key: string; scope: string | null };
      expect(body.scope).toBe(scope === "legacy" ? null : scope);
      keys[scope] = { id: body.id, key: body.key };
    }
    const call = (path: string, json: unknown) =>
      api.request(path, { method: "POST", key: keys.admin.key, projectId, json });
    await call("/api/v1/workers/deployments", { deployment_id: "d1" });
    await call("/api/v1/workers/deployments/d1/workflows", { workflows: [{ workflow_id: "wf" }] });
  });

  const as = (who: keyof typeof keys, method: string, path: string, json?: unknown) =>
    api.request(path, { method, key: keys[who].key, projectId, ...(json === undefined ? {} : { json }) });

  const register = { deployment_id: "d1", mode: "queue", capabilities: { workflow_ids: ["wf"] } };

  it("a client key runs, reads and publishes, but cannot register as a worker or speak the worker protocol", async () => {
    expect((await as("client", "POST", "/api/v1/workflows/wf/run", { input: {} })).status).toBe(202);
    expect((await as("client", "GET", "/api/v1/executions")).status).toBe(200);
    expect(
      (await as("client", "POST", "/api/v1/events/publish", { topic: "t", events: [{ data: {} }] })).status,
    ).toBe(201);
    expect((await as("client", "GET", "/api/v1/workers")).status).toBe(200);
    const workersBefore = await api.engine.prisma.worker.count({ where: { projectId } });
    await expectError(await as("client", "POST", "/api/v1/workers/register", register), 403, "FORBIDDEN");
    await expectError(
      await as("client", "POST", "/api/v1/workers/deployments", { deployment_id: "d2" }),
      403,
      "FORBIDDEN",
    );
    await expectError(
      await as("client", "POST", "/api/v1/tools/register", { tool_id: "t", deployment_id: "d1" }),
      403,
      "FORBIDDEN",
    );
    await expectError(await as("client", "POST", "/internal/spans/batch", { spans: [] }), 403, "FORBIDDEN");
    expect(await api.engine.prisma.worker.count({ where: { projectId } })).toBe(workersBefore);
  });

  it("a worker key registers and reports, but cannot start, list, cancel or resume runs", async () => {
    expect((await as("worker", "POST", "/api/v1/workers/register", register)).status).toBe(200);
    const runsBefore = await api.engine.prisma.execution.count({ where: { projectId } });
    await expectError(
      await as("worker", "POST", "/api/v1/workflows/wf/run", { input: {} }),
      403,
      "FORBIDDEN",
    );
    await expectError(await as("worker", "GET", "/api/v1/executions"), 403, "FORBIDDEN");
    expect(await api.engine.prisma.execution.count({ where: { projectId } })).toBe(runsBefore);
  });

  it("only the admin key or an admin-scoped key manages keys; a key from before scopes does all else", async () => {
    for (const who of ["worker", "client", "legacy"] as const) {
      await expectError(
        await as(who, "POST", `/api/v1/projects/${projectId}/api-keys`, { name: "x", scope: "admin" }),
        403,
        "FORBIDDEN",
      );
      await expectError(
        await as(who, "DELETE", `/api/v1/projects/${projectId}/api-keys/${keys.worker.id}`),
        403,
        "FORBIDDEN",
      );
      await expectError(await as(who, "GET", `/api/v1/projects/${projectId}/api-keys`), 403, "FORBIDDEN");
    }
    // The worker key survived every attempt above.
    expect((await as("worker", "GET", "/api/v1/workers")).status).toBe(200);
    // The legacy key still runs and registers, as it always could.
    expect((await as("legacy", "POST", "/api/v1/workflows/wf/run", { input: {} })).status).toBe(202);
    expect((await as("legacy", "POST", "/api/v1/workers/register", register)).status).toBe(200);

    const minted = await as("admin", "POST", `/api/v1/projects/${projectId}/api-keys`, {
      name: "y",
      scope: "client",
    });
    expect(minted.status).toBe(201);
    const { id } = (await minted.json()) as { id: string };
    expect((await as("admin", "DELETE", `/api/v1/projects/${projectId}/api-keys/${id}`)).status).toBe(204);
    await expectError(
      await as("admin", "POST", `/api/v1/projects/${projectId}/api-keys`, { name: "z", scope: "root" }),
      400,
      "INVALID_INPUT",
    );
  });
});
