// The worker protocol's session memory (spec/worker-protocol.md §3.5): an agent session's summary
// and messages, kept per project for remote workers.
import { createRoute } from "@hono/zod-openapi";
import { SessionMemoryBody, SessionMemoryResponse, SessionParams } from "@spool/shared";
import type { App } from "../context.js";
import { errorResponses } from "../errors.js";
import { AUTHENTICATED, json, jsonBody, ProjectHeaders } from "../openapi.js";

const base = { security: AUTHENTICATED, tags: ["Worker protocol"] };

const getMemory = createRoute({
  ...base,
  method: "get",
  path: "/internal/session/{session_id}/memory",
  summary: "A session's memory (empty for a session never stored)",
  request: { headers: ProjectHeaders, params: SessionParams },
  responses: { 200: json(SessionMemoryResponse, "The memory"), ...errorResponses(400, 401, 403, 404) },
});
const putMemory = createRoute({
  ...base,
  method: "put",
  path: "/internal/session/{session_id}/memory",
  summary: "Replace a session's memory",
  request: { headers: ProjectHeaders, params: SessionParams, body: jsonBody(SessionMemoryBody) },
  responses: { 200: json(SessionMemoryResponse, "Stored"), ...errorResponses(400, 401, 403, 404, 413, 415) },
});

export function registerInternalSessions(app: App) {
  app.openapi(getMemory, async (c) => {
    return c.json(
      await c.get("engine").sessions.get(c.get("projectId"), c.req.valid("param").session_id),
      200,
    );
  });

  app.openapi(putMemory, async (c) => {
    const b = c.req.valid("json");
    const memory = { summary: b.summary ?? null, messages: b.messages };
    return c.json(
      await c.get("engine").sessions.put(c.get("projectId"), c.req.valid("param").session_id, memory),
      200,
    );
  });
}
