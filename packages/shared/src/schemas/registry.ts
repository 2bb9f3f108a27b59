import { z } from "@hono/zod-openapi";
import { ClientId } from "../ids.js";
import { NextCursor } from "../pagination.js";
import { JsonObject, MAX_INT4, Text, Timestamp } from "./common.js";

export const WORKFLOW_TYPES = ["workflow", "agent", "tool"] as const;

export const DeploymentParams = z.object({
  deployment_id: ClientId.openapi({ param: { name: "deployment_id", in: "path" } }),
});
export const WorkflowParams = z.object({
  workflow_id: ClientId.openapi({ param: { name: "workflow_id", in: "path" } }),
});
export const AgentParams = z.object({
  agent_id: ClientId.openapi({ param: { name: "agent_id", in: "path" } }),
});
export const ToolParams = z.object({ tool_id: ClientId.openapi({ param: { name: "tool_id", in: "path" } }) });
export const DeploymentQuery = z.object({
  deployment_id: ClientId.optional().openapi({ description: "Defaults to the latest deployment" }),
});

export const RegisterDeploymentBody = z.object({ deployment_id: ClientId }).openapi("RegisterDeploymentBody");
export const RegisterDeploymentResponse = z
  .object({ deployment_id: z.string(), status: z.string() })
  .openapi("RegisterDeploymentResponse");

export const WorkflowRegistrationInput = z
  .object({
    workflow_id: ClientId,
    workflow_type: z.enum(WORKFLOW_TYPES).default("workflow"),
    trigger_on_event: z.boolean().nullish(),
    scheduled: z.boolean().nullish(),
    queue_name: ClientId.nullish(),
  })
  .openapi("WorkflowRegistrationInput");

export const RegisterWorkflowsBody = z
  .union([
    z.object({ workflows: z.array(WorkflowRegistrationInput).min(1).max(1000) }),
    WorkflowRegistrationInput,
  ])
  .openapi("RegisterWorkflowsBody");

export const WorkflowResponse = z
  .object({
    workflow_id: z.string(),
    deployment_id: z.string(),
    workflow_type: z.enum(WORKFLOW_TYPES),
    trigger_on_event: z.boolean(),
    scheduled: z.boolean(),
    queue_name: z.string().nullable(),
    created_at: Timestamp,
  })
  .openapi("Workflow");

export const RegisterWorkflowsResponse = z
  .object({ workflows: z.array(WorkflowResponse) })
  .openapi("RegisterWorkflowsResponse");
export const ListWorkflowsResponse = z
  .object({ workflows: z.array(WorkflowResponse), next_cursor: NextCursor })
  .openapi("ListWorkflowsResponse");

export const QueueInput = z.object({
  name: ClientId,
  concurrency_limit: z.number().int().min(1).max(100_000).nullish(),
});
export const RegisterQueuesBody = z
  .object({ deployment_id: ClientId, queues: z.array(QueueInput).min(1).max(1000) })
  .openapi("RegisterQueuesBody");
export const QueueResponse = z
  .object({ name: z.string(), concurrency_limit: z.number().int().nullable() })
  .openapi("Queue");
export const RegisterQueuesResponse = z
  .object({ queues: z.array(QueueResponse) })
  .openapi("RegisterQueuesResponse");
export const QueueStateResponse = QueueResponse.extend({
  queued: z.number().int().openapi({ description: "Runs of the queue waiting to start" }),
  running: z.number().int(),
  waiting_for_slot: z.number().int().openapi({
    description: "Queued runs held back by the queue's concurrency limit (per concurrency key)",
  }),
  consumers: z.number().int().openapi({
    description:
      "Online workers that can take the queue's runs: they serve a workflow registered on it or with runs on it",
  }),
}).openapi("QueueState");
export const ListQueuesResponse = z
  .object({ queues: z.array(QueueStateResponse), next_cursor: NextCursor })
  .openapi("ListQueuesResponse");

export const DeploymentResponse = z
  .object({ id: z.string(), status: z.string(), created_at: Timestamp })
  .openapi("Deployment");
export const DeploymentDetailResponse = DeploymentResponse.extend({
  workflows: z.array(WorkflowResponse),
}).openapi("DeploymentDetail");
export const ListDeploymentsResponse = z
  .object({ deployments: z.array(DeploymentResponse), next_cursor: NextCursor })
  .openapi("ListDeploymentsResponse");

export const RegisterAgentBody = z
  .object({
    id: ClientId,
    deployment_id: ClientId.nullish(),
    // The protocol lets a worker send null for any field; an unnamed model is stored as "unknown".
    provider: Text.min(1).max(100).nullish(),
    model: Text.min(1).max(200).nullish(),
    system_prompt: Text.max(100_000).nullish(),
    tools: z
      .array(z.union([ClientId, JsonObject]))
      .max(500)
      .nullish(),
    temperature: z.number().min(0).max(2).nullish(),
    max_output_tokens: z.number().int().min(1).max(MAX_INT4).nullish(),
    config: JsonObject.nullish(),
    metadata: JsonObject.nullish(),
  })
  .openapi("RegisterAgentBody");

export const AgentResponse = z
  .object({
    id: z.string(),
    deployment_id: z.string(),
    provider: z.string(),
    model: z.string(),
    system_prompt: z.string().nullable(),
    tools: z.array(z.unknown()),
    temperature: z.number().nullable(),
    max_output_tokens: z.number().int().nullable(),
    config: JsonObject.nullable(),
    metadata: JsonObject.nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi("Agent");
export const ListAgentsResponse = z
  .object({ agents: z.array(AgentResponse), next_cursor: NextCursor })
  .openapi("ListAgentsResponse");

export const RegisterToolBody = z
  .object({
    id: ClientId,
    deployment_id: ClientId.nullish(),
    tool_type: Text.min(1).max(100).nullish(),
    description: Text.max(10_000).nullish(),
    parameters: JsonObject.nullish().openapi({ description: "JSON Schema of the tool's input" }),
    metadata: JsonObject.nullish(),
  })
  .openapi("RegisterToolBody");

export const ToolResponse = z
  .object({
    id: z.string(),
    deployment_id: z.string(),
    tool_type: z.string(),
    description: z.string().nullable(),
    parameters: JsonObject.nullable(),
    metadata: JsonObject.nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi("Tool");
export const ListToolsResponse = z
  .object({ tools: z.array(ToolResponse), next_cursor: NextCursor })
  .openapi("ListToolsResponse");
