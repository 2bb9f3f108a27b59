import { describe, expect, it } from "vitest";
import { createTestApi } from "./harness.js";

describe("health", () => {
  it("is 200 with both checks ok, without auth, on both paths", async () => {
    const api = createTestApi();
    for (const path of ["/api/v1/health", "/health"]) {
      const res = await api.request(path);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        status: "healthy",
        version: "1.0.0",
        checks: { postgres: "ok", redis: "ok" },
      });
    }
  });

  it("is 503 naming redis when redis is unreachable", async () => {
    // A port nothing listens on: the real client fails to connect.
    const api = createTestApi({ redisUrl: "redis://127.0.0.1:1" });
    const res = await api.request("/api/v1/health");
    expect(res.status).toBe(503);
    const body = (await res.json()) as { status: string; checks: { postgres: string; redis: string } };
    expect(body.status).toBe("unhealthy");
    expect(body.checks.postgres).toBe("ok");
    expect(body.checks.redis).toMatch(/^error: /);
  });
});
