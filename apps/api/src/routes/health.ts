import { createRoute } from "@hono/zod-openapi";
import { HealthResponse } from "@spool/shared";
import type { App } from "../context.js";
import { json } from "../openapi.js";
import { VERSION } from "../version.js";

const route = (path: string, hide = false) =>
  createRoute({
    method: "get",
    path,
    tags: ["Health"],
    summary: "Health of the API and its dependencies",
    security: [],
    hide,
    responses: {
      200: json(HealthResponse, "Healthy"),
      503: json(HealthResponse, "A dependency is down; the failing check is named"),
    },
  });

export function registerHealth(app: App) {
  for (const r of [route("/api/v1/health"), route("/health", true)]) {
    app.openapi(r, async (c) => {
      // No auth here: the checks name the kind of failure only; the engine logs the detail.
      const checks = await c.get("engine").checkDependencies();
      const healthy = checks.postgres === "ok" && checks.redis === "ok";
      return c.json(
        { status: healthy ? "healthy" : "unhealthy", version: VERSION, checks } as const,
        healthy ? 200 : 503,
      );
    });
  }
}
