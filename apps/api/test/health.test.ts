import { type AddressInfo, createServer, type Socket } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
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
    // The driver's message ("connect ECONNREFUSED 127.0.0.1:1") stays in the log: no auth here.
    expect(body.checks.redis).toBe("error: unreachable");
    expect(JSON.stringify(body)).not.toMatch(/127\.0\.0\.1|ECONNREFUSED/);
  });

  it("is 503 naming a timeout when redis accepts connections but never answers", async () => {
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const { port } = silent.address() as AddressInfo;
    const api = createTestApi({ redisUrl: `redis://127.0.0.1:${port}` });
    // Registered after the harness's hook, so it runs first: the client's quit then fails fast.
    afterAll(() => {
      for (const socket of sockets) socket.destroy();
      silent.close();
    });
    const res = await api.request("/api/v1/health");
    expect(res.status).toBe(503);
    const body = (await res.json()) as { checks: { postgres: string; redis: string } };
    expect(body.checks).toEqual({ postgres: "ok", redis: "error: timeout" });
  });
});
