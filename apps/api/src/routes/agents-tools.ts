// Agent and tool registrations. Each is also a workflow registration, so both run via /workflows/{id}/run.
import { createRoute } from "@hono/zod-openapi";
import {
  AgentParams,
  AgentResponse,
  ListAgentsResponse,
  ListToolsResponse,
  PageQuery,
  RegisterAgentBody,
  RegisterToolBody,
  SuccessResponse,
  ToolParams,
  ToolResponse,
} from "@spool/shared";
import type { App } from "../context.js";
import { errorResponses } from "../errors.js";
import { AUTHENTICATED, json, jsonBody, ProjectHeaders } from "../openapi.js";
import { presentAgent, presentTool } from "../presenters.js";

const base = { security: AUTHENTICATED } as const;

const registerAgent = createRoute({
  ...base,
  method: "post",
  path: "/api/v1/agents/register",
  tags: ["Agents"],
  summary: "Register (upsert) an agent; deployment_id defaults to the latest deployment",
  request: { headers: ProjectHeaders, body: jsonBody(RegisterAgentBody) },
  responses: { 200: json(SuccessResponse, "Registered"), ...errorResponses(400, 401, 403, 404, 413, 415) },
});
const listAgents = createRoute({
  ...base,
  method: "get",
  path: "/api/v1/agents",
  tags: ["Agents"],
  summary: "List agents (each at its latest deployment)",
  request: { headers: ProjectHeaders, query: PageQuery },
  responses: { 200: json(ListAgentsResponse, "Agents by id"), ...errorResponses(400, 401, 403, 404) },
});
const getAgent = createRoute({
  ...base,
  method: "get",
  path: "/api/v1/agents/{agent_id}",
  tags: ["Agents"],
  summary: "Get an agent",
  request: { headers: ProjectHeaders, params: AgentParams },
  responses: { 200: json(AgentResponse, "The agent"), ...errorResponses(400, 401, 403, 404) },
});
const registerTool = createRoute({
  ...base,
  method: "post",
  path: "/api/v1/tools/register",
  tags: ["Tools"],
  summary: "Register (upsert) a tool; deployment_id defaults to the latest deployment",
  request: { headers: ProjectHeaders, body: jsonBody(RegisterToolBody) },
  responses: { 200: json(SuccessResponse, "Registered"), ...errorResponses(400, 401, 403, 404, 413, 415) },
});
const listTools = createRoute({
  ...base,
  method: "get",
  path: "/api/v1/tools",
  tags: ["Tools"],
  summary: "List tools (each at its latest deployment)",
  request: { headers: ProjectHeaders, query: PageQuery },
  responses: { 200: json(ListToolsResponse, "Tools by id"), ...errorResponses(400, 401, 403, 404) },
});
const getTool = createRoute({
  ...base,
  method: "get",
  path: "/api/v1/tools/{tool_id}",
  tags: ["Tools"],
  summary: "Get a tool",
  request: { headers: ProjectHeaders, params: ToolParams },
  responses: { 200: json(ToolResponse, "The tool"), ...errorResponses(400, 401, 403, 404) },
});

export function registerAgentsAndTools(app: App) {
  app.openapi(registerAgent, async (c) => {
    const b = c.req.valid("json");
    await c.get("engine").registry.registerAgent(c.get("projectId"), {
      agentId: b.id,
      deploymentId: b.deployment_id,
      provider: b.provider ?? "unknown",
      model: b.model ?? "unknown",
      systemPrompt: b.system_prompt,
      tools: b.tools,
      temperature: b.temperature,
      maxOutputTokens: b.max_output_tokens,
      config: b.config,
      metadata: b.metadata,
    });
    return c.json({ success: true } as const, 200);
  });

  app.openapi(listAgents, async (c) => {
    const page = await c.get("engine").registry.listAgents(c.get("projectId"), c.req.valid("query"));
    return c.json({ agents: page.items.map(presentAgent), next_cursor: page.nextCursor }, 200);
  });

  app.openapi(getAgent, async (c) => {
    return c.json(
      presentAgent(
        await c.get("engine").registry.getAgent(c.get("projectId"), c.req.valid("param").agent_id),
      ),
      200,
    );
  });

  app.openapi(registerTool, async (c) => {
    const b = c.req.valid("json");
    await c.get("engine").registry.registerTool(c.get("projectId"), {
      toolId: b.id,
      deploymentId: b.deployment_id,
      toolType: b.tool_type,
      description: b.description,
      parameters: b.parameters,
      metadata: b.metadata,
    });
    return c.json({ success: true } as const, 200);
  });

  app.openapi(listTools, async (c) => {
    const page = await c.get("engine").registry.listTools(c.get("projectId"), c.req.valid("query"));
    return c.json({ tools: page.items.map(presentTool), next_cursor: page.nextCursor }, 200);
  });

  app.openapi(getTool, async (c) => {
    return c.json(
      presentTool(await c.get("engine").registry.getTool(c.get("projectId"), c.req.valid("param").tool_id)),
      200,
    );
  });
}
