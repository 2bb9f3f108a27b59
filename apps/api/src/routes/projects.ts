import { createRoute } from "@hono/zod-openapi";
import {
  ApiKeyParams,
  CreateApiKeyBody,
  CreateApiKeyResponse,
  CreateProjectBody,
  ListApiKeysResponse,
  ListProjectsResponse,
  PageQuery,
  ProjectParams,
  ProjectResponse,
} from "@spool/shared";
import type { App } from "../context.js";
import { errorResponses } from "../errors.js";
import { checkProjectAccess, requireAdmin, requireKeyManager } from "../middleware/auth.js";
import { AUTHENTICATED, json, jsonBody } from "../openapi.js";
import { presentApiKey, presentProject } from "../presenters.js";

const tags = ["Projects"];

const createProject = createRoute({
  method: "post",
  path: "/api/v1/projects",
  tags,
  summary: "Create a project (admin key)",
  security: AUTHENTICATED,
  request: { body: jsonBody(CreateProjectBody) },
  responses: { 201: json(ProjectResponse, "Created"), ...errorResponses(400, 401, 403, 413, 415) },
});

const listProjects = createRoute({
  method: "get",
  path: "/api/v1/projects",
  tags,
  summary: "All projects for the admin key; the key's own project otherwise",
  security: AUTHENTICATED,
  request: { query: PageQuery },
  responses: { 200: json(ListProjectsResponse, "Projects, oldest first"), ...errorResponses(400, 401, 403) },
});

const getProject = createRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}",
  tags,
  summary: "Get a project",
  security: AUTHENTICATED,
  request: { params: ProjectParams },
  responses: { 200: json(ProjectResponse, "The project"), ...errorResponses(401, 403, 404) },
});

const createApiKey = createRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/api-keys",
  tags,
  summary: "Create an API key; the key is shown only in this response",
  security: AUTHENTICATED,
  request: { params: ProjectParams, body: jsonBody(CreateApiKeyBody) },
  responses: { 201: json(CreateApiKeyResponse, "Created"), ...errorResponses(400, 401, 403, 404, 413, 415) },
});

const listApiKeys = createRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/api-keys",
  tags,
  summary: "List a project's API keys (never the keys themselves)",
  security: AUTHENTICATED,
  request: { params: ProjectParams, query: PageQuery },
  responses: {
    200: json(ListApiKeysResponse, "API keys, oldest first"),
    ...errorResponses(400, 401, 403, 404),
  },
});

const revokeApiKey = createRoute({
  method: "delete",
  path: "/api/v1/projects/{project_id}/api-keys/{key_id}",
  tags,
  summary: "Revoke an API key; it stops working at once",
  security: AUTHENTICATED,
  request: { params: ApiKeyParams },
  responses: { 204: { description: "Revoked" }, ...errorResponses(401, 403, 404) },
});

export function registerProjects(app: App) {
  app.openapi(createProject, async (c) => {
    requireAdmin(c.get("principal"));
    const project = await c.get("engine").projects.create(c.req.valid("json"));
    return c.json(presentProject(project), 201);
  });

  app.openapi(listProjects, async (c) => {
    const page = await c.get("engine").projects.list(c.get("principal"), c.req.valid("query"));
    return c.json({ projects: page.items.map(presentProject), next_cursor: page.nextCursor }, 200);
  });

  app.openapi(getProject, async (c) => {
    const { project_id } = c.req.valid("param");
    await checkProjectAccess(c, project_id);
    return c.json(presentProject(await c.get("engine").projects.get(project_id)), 200);
  });

  app.openapi(createApiKey, async (c) => {
    const { project_id } = c.req.valid("param");
    await checkProjectAccess(c, project_id);
    requireKeyManager(c.get("principal"));
    const body = c.req.valid("json");
    const { row, key } = await c
      .get("engine")
      .projects.createApiKey(project_id, body.name, body.scope ?? null);
    const { id, name, scope, last_four, created_at } = presentApiKey(row);
    return c.json({ id, name, key, scope, last_four, created_at }, 201);
  });

  app.openapi(listApiKeys, async (c) => {
    const { project_id } = c.req.valid("param");
    await checkProjectAccess(c, project_id);
    requireKeyManager(c.get("principal"));
    const page = await c.get("engine").projects.listApiKeys(project_id, c.req.valid("query"));
    return c.json({ api_keys: page.items.map(presentApiKey), next_cursor: page.nextCursor }, 200);
  });

  app.openapi(revokeApiKey, async (c) => {
    const { project_id, key_id } = c.req.valid("param");
    await checkProjectAccess(c, project_id);
    requireKeyManager(c.get("principal"));
    await c.get("engine").projects.revokeApiKey(project_id, key_id);
    return c.body(null, 204);
  });
}
