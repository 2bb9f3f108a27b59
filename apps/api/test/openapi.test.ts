import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { createTestApi } from "./harness.js";

const api = createTestApi();

describe("OpenAPI document", () => {
  it("is valid OpenAPI 3.1 and lists every route the app serves", async () => {
    const res = await api.request("/api/v1/openapi.json");
    expect(res.status).toBe(200);
    const doc = (await res.json()) as {
      openapi: string;
      paths: Record<string, Record<string, unknown>>;
      components: { securitySchemes: Record<string, unknown> };
      tags: { name: string }[];
    };
    const validator = new Validator();
    const result = await validator.validate(doc as unknown as Parameters<Validator["validate"]>[0]);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.components.securitySchemes).toEqual({
      bearer_auth: expect.objectContaining({ type: "http", scheme: "bearer" }),
      cookie_auth: expect.objectContaining({ type: "apiKey", in: "cookie", name: "service_auth" }),
    });
    const registerTrigger = doc.paths["/api/v1/event-triggers/register"]?.post as { operationId?: string };
    expect(registerTrigger.operationId).toBe("register_event_trigger");
    expect(doc.tags.map((t) => t.name)).toEqual([
      "Health",
      "Session",
      "Projects",
      "Agents",
      "Tools",
      "Workflows",
      "Executions",
      "Traces",
      "Events",
      "Event Triggers",
      "Schedules",
      "Workers",
      "Queues",
      "Deployments",
      "Worker protocol",
    ]);

    const documented = new Set(
      Object.entries(doc.paths).flatMap(([path, ops]) =>
        Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`),
      ),
    );
    for (const expected of [
      "GET /api/v1/health",
      "POST /api/v1/projects",
      "GET /api/v1/projects",
      "GET /api/v1/projects/{project_id}",
      "POST /api/v1/projects/{project_id}/api-keys",
      "GET /api/v1/projects/{project_id}/api-keys",
      "DELETE /api/v1/projects/{project_id}/api-keys/{key_id}",
      "POST /api/v1/workers/deployments",
      "POST /api/v1/workers/deployments/{deployment_id}/workflows",
      "POST /api/v1/workers/queues",
      "GET /api/v1/deployments",
      "GET /api/v1/deployments/{deployment_id}",
      "GET /api/v1/workflows",
      "GET /api/v1/workflows/{workflow_id}",
      "POST /api/v1/agents/register",
      "GET /api/v1/agents",
      "GET /api/v1/agents/{agent_id}",
      "POST /api/v1/tools/register",
      "GET /api/v1/tools",
      "GET /api/v1/tools/{tool_id}",
      "POST /api/v1/workers/register",
      "POST /api/v1/workers/{worker_id}/heartbeat",
      "POST /api/v1/workers/{worker_id}/online",
      "POST /api/v1/workers/{worker_id}/deregister",
      "GET /api/v1/workers",
      "GET /api/v1/workers/{worker_id}",
      "GET /api/v1/workers/status",
      "GET /api/v1/workers/active",
      "POST /api/v1/workflows/{workflow_id}/run",
      "POST /api/v1/workflows/batch_run",
      "GET /api/v1/executions",
      "GET /api/v1/executions/{execution_id}",
      "GET /api/v1/executions/{execution_id}/steps",
      "POST /api/v1/executions/{execution_id}/resume",
      "POST /api/v1/executions/{execution_id}/cancel",
      "POST /api/v1/events/publish",
      "GET /api/v1/events",
      "GET /api/v1/events/stream",
      "POST /api/v1/event-triggers/register",
      "GET /api/v1/event-triggers",
      "PATCH /api/v1/event-triggers/{trigger_id}",
      "DELETE /api/v1/event-triggers/{trigger_id}",
      "POST /api/v1/schedules",
      "GET /api/v1/schedules",
      "GET /api/v1/schedules/{schedule_id}",
      "PATCH /api/v1/schedules/{schedule_id}",
      "DELETE /api/v1/schedules/{schedule_id}",
      "GET /api/v1/traces",
      "GET /api/v1/traces/{trace_id}",
      "POST /internal/spans/batch",
      // The worker protocol (spec/worker-protocol.md §3).
      "GET /internal/executions/{execution_id}/steps",
      "GET /internal/executions/{execution_id}/steps/{step_key}",
      "POST /internal/executions/{execution_id}/steps",
      "POST /internal/executions/{execution_id}/wait",
      "PUT /internal/executions/{execution_id}/otel-span-id",
      "POST /internal/executions/{execution_id}/complete",
      "POST /internal/executions/{execution_id}/fail",
      "POST /internal/executions/{execution_id}/confirm-cancellation",
      "GET /internal/session/{session_id}/memory",
      "PUT /internal/session/{session_id}/memory",
    ]) {
      expect(documented, expected).toContain(expected);
    }
  });

  it("serves the docs page and its assets locally (no CDN)", async () => {
    const page = await api.request("/api/v1/docs");
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain("/api/v1/openapi.json");
    expect(html).not.toMatch(/https?:\/\//);
    for (const asset of html.matchAll(/(?:src|href)="([^"]+)"/g)) {
      const res = await api.request(asset[1]!);
      expect(res.status, asset[1]).toBe(200);
      expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(100);
    }
  });
});
