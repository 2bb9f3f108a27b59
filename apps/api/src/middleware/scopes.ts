import type { KeyScope } from "@spool/shared";

/**
 * What only workers do: register themselves and what they serve (and archive what none serves any
 * more), and speak the worker protocol.
 */
const isWorkerRoute = (method: string, path: string) =>
  path.startsWith("/internal/") ||
  (method !== "GET" && (path === "/api/v1/workers" || path.startsWith("/api/v1/workers/"))) ||
  (method === "POST" && /^\/api\/v1\/(agents|tools|event-triggers)\/register$/.test(path)) ||
  (method === "DELETE" && /^\/api\/v1\/(workflows|deployments)\/[^/]+$/.test(path));

/** Client routes a worker needs too: reading worker state, publishing (suspends), its schedules. */
const isWorkerAlso = (method: string, path: string) =>
  (method === "GET" && (path === "/api/v1/workers" || path.startsWith("/api/v1/workers/"))) ||
  (method === "POST" && (path === "/api/v1/events/publish" || path === "/api/v1/schedules"));

/**
 * Whether a project key of this scope may call a project-scoped route (key management is checked by
 * its routes). A key from before scopes (null) may call every one, as it always could.
 */
export function scopeAllows(scope: KeyScope | null, method: string, path: string): boolean {
  switch (scope) {
    case null:
    case "admin":
      return true;
    case "worker":
      return isWorkerRoute(method, path) || isWorkerAlso(method, path);
    case "client":
      return !isWorkerRoute(method, path);
  }
}
