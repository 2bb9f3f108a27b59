// Prometheus' scrape endpoint: behind the admin key, as Prometheus' `authorization` setting sends it.
import type { App } from "../context.js";
import { authenticate, requireAdmin } from "../middleware/auth.js";

export function registerMetrics(app: App) {
  app.get("/metrics", authenticate, async (c) => {
    requireAdmin(c.get("principal"));
    const registry = c.get("metrics").registry;
    return c.body(await registry.metrics(), 200, { "content-type": registry.contentType });
  });
}
