import { beforeAll, describe, expect, it } from "vitest";
import { createTestApi, expectError } from "./harness.js";

const api = createTestApi();

/** Every project-scoped route with a body that would be valid, so only auth decides the outcome. */
const PROJECT_ROUTES: { method: string; path: string; json?: unknown }[] = [
  { method: "POST", path: "/api/v1/workers/deployments", json: { deployment_id: "d" } },
  { method: "POST", path: "/api/v1/workers/deployments/d/workflows", json: { workflow_id: "w" } },
  { method: "POST", path: "/api/v1/workers/queues", json: { deployment_id: "d", queues: [{ name: "q" }] } },
  { method: "GET", path: "/api/v1/deployments" },
  { method: "GET", path: "/api/v1/deployments/d" },
  { method: "GET", path: "/api/v1/workflows" },
  { method: "GET", path: "/api/v1/workflows/w" },
  { method: "POST", path: "/api/v1/agents/register", json: { id: "a", provider: "openai", model: "m" } },
  { method: "GET", path: "/api/v1/agents" },
  { method: "GET", path: "/api/v1/agents/a" },
  { method: "POST", path: "/api/v1/tools/register", json: { id: "t" } },
  { method: "GET", path: "/api/v1/tools" },
  { method: "GET", path: "/api/v1/tools/t" },
  { method: "POST", path: "/api/v1/workers/register", json: { deployment_id: "d", mode: "queue" } },
  { method: "POST", path: "/api/v1/workers/00000000-0000-4000-8000-000000000000/heartbeat", json: {} },
  { method: "POST", path: "/api/v1/workers/00000000-0000-4000-8000-000000000000/online" },
  { method: "POST", path: "/api/v1/workers/00000000-0000-4000-8000-000000000000/deregister" },
  { method: "GET", path: "/api/v1/workers" },
  { method: "GET", path: "/api/v1/workers/status?deployment_id=d" },
  { method: "GET", path: "/api/v1/workers/active" },
  { method: "GET", path: "/api/v1/workers/00000000-0000-4000-8000-000000000000" },
  {
    method: "POST",
    path: "/api/v1/event-triggers/register",
    json: { workflow_id: "w", deployment_id: "d", event_topic: "t", batch_size: 1 },
  },
  { method: "GET", path: "/api/v1/event-triggers" },
  { method: "DELETE", path: "/api/v1/event-triggers/00000000-0000-4000-8000-000000000000" },
  { method: "POST", path: "/api/v1/schedules", json: { workflow_id: "w", cron: "* * * * *" } },
  { method: "GET", path: "/api/v1/schedules" },
  { method: "GET", path: "/api/v1/schedules/00000000-0000-4000-8000-000000000000" },
  {
    method: "PATCH",
    path: "/api/v1/schedules/00000000-0000-4000-8000-000000000000",
    json: { status: "paused" },
  },
  { method: "DELETE", path: "/api/v1/schedules/00000000-0000-4000-8000-000000000000" },
  { method: "POST", path: "/api/v1/events/publish", json: { topic: "t", data: {} } },
  { method: "GET", path: "/api/v1/events?topic=t" },
  { method: "POST", path: "/api/v1/workflows/w/run", json: { input: {} } },
  { method: "POST", path: "/api/v1/workflows/batch_run", json: { workflows: [{ workflow_id: "w" }] } },
  { method: "GET", path: "/api/v1/executions" },
  { method: "GET", path: "/api/v1/executions/00000000-0000-4000-8000-000000000000" },
  { method: "GET", path: "/api/v1/executions/00000000-0000-4000-8000-000000000000/steps" },
  {
    method: "POST",
    path: "/api/v1/executions/00000000-0000-4000-8000-000000000000/resume",
    json: { data: {} },
  },
  { method: "POST", path: "/api/v1/executions/00000000-0000-4000-8000-000000000000/cancel" },
  { method: "GET", path: "/api/v1/traces" },
  { method: "GET", path: "/api/v1/traces/00000000000040008000000000000000" },
  {
    method: "POST",
    path: "/internal/spans/batch",
    json: {
      spans: [
        {
          trace_id: "0000000000004000800000000000aaaa",
          span_id: "000000000000aaaa",
          name: "auth-probe",
          span_type: "custom",
          started_at: "2026-01-01T00:00:00.000Z",
        },
      ],
    },
  },
];

describe("auth on every project-scoped route", () => {
  let a: { projectId: string; key: string };
  let b: { projectId: string; key: string };
  let revokedKey: string;

  beforeAll(async () => {
    a = await api.createProject("a");
    b = await api.createProject("b");
    const created = await api.request(`/api/v1/projects/${a.projectId}/api-keys`, {
      method: "POST",
      key: api.adminKey,
      json: { name: "to-revoke" },
    });
    const { id, key } = (await created.json()) as { id: string; key: string };
    revokedKey = key;
    const del = await api.request(`/api/v1/projects/${a.projectId}/api-keys/${id}`, {
      method: "DELETE",
      key: api.adminKey,
    });
    expect(del.status).toBe(204);
  });

  it.each(PROJECT_ROUTES)("$method $path", async ({ method, path, json }) => {
    const send = (key?: string, projectId?: string, extra: Record<string, string> = {}) =>
      api.request(path, { method, key, projectId, json, headers: extra });

    await expectError(await send(undefined, a.projectId), 401, "UNAUTHORIZED");
    await expectError(await send(`sk_${"x".repeat(40)}`, a.projectId), 401, "UNAUTHORIZED");
    await expectError(await send(revokedKey, a.projectId), 401, "UNAUTHORIZED");
    await expectError(await send(a.key), 400, "BAD_REQUEST");
    await expectError(await send(a.key, b.projectId), 403, "FORBIDDEN");
    await expectError(await send(a.key, "not-a-uuid"), 403, "FORBIDDEN");
    await expectError(await send(api.adminKey, "00000000-0000-4000-8000-000000000000"), 404, "NOT_FOUND");

    // Accepted credentials: bearer, the service_auth cookie, and the Project-ID alias.
    for (const res of [
      await send(a.key, a.projectId),
      await send(undefined, a.projectId, { cookie: `service_auth=${a.key}` }),
      await api.request(path, { method, json, key: a.key, headers: { "project-id": a.projectId } }),
      await send(api.adminKey, a.projectId),
    ]) {
      expect(res.status, `${res.status} ${await res.clone().text()}`).not.toBe(401);
      expect(res.status).not.toBe(403);
      expect(res.status).toBeLessThan(500);
    }
  });
});
