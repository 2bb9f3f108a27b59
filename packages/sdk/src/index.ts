export {
  type AgentDefinition,
  type AgentInput,
  type AgentResult,
  ChildWorkflowError,
  type Duration,
  isAgentDefinition,
  isQueueDefinition,
  isToolDefinition,
  isWorkflowDefinition,
  type LlmResponse,
  type ModelConfig,
  NonRetryableError,
  type QueueDefinition,
  type ReceivedEvent,
  RetryAfterError,
  type StepApi,
  type StepRunOptions,
  StepTimeoutError,
  type ToolApproval,
  type ToolContext,
  type ToolDefinition,
  ToolRejectedError,
  type WorkflowContext,
  type WorkflowDefinition,
  type WorkflowOptions,
} from "@spool/shared";
export { type AgentOptions, defineAgent } from "./agent.js";
export {
  type ClientOptions,
  createClient,
  type Execution,
  type QueueState,
  type RunOptions,
  type RunResult,
  SpoolApiError,
  type SpoolClient,
  type Step,
  type StepsPage,
} from "./client.js";
export { callModel, type ModelCall, modelToolName, toolJsonSchema } from "./llm/call-model.js";
export { createModel, resolveModelConfig } from "./llm/model.js";
export { defineQueue } from "./queue.js";
export { defineTool } from "./tool.js";
export { createWorker, type RemoteWorker, type WorkerOptions } from "./worker/create-worker.js";
export { defineWorkflow } from "./workflow.js";
