// One LLM call through the Vercel AI SDK, streamed: text deltas and tool calls are published live,
// and the whole response is returned for the `llm` step to store.
import { randomUUID } from "node:crypto";
import type { LlmResponse, LlmToolCall, ModelConfig, StepStream, ToolDefinition } from "@spool/shared";
import { NonRetryableError } from "@spool/shared";
import { APICallError, jsonSchema, type ModelMessage, streamText, type ToolSet, tool } from "ai";
import { z } from "zod";
import { createModel, resolveModelConfig } from "./model.js";

export interface ModelCall {
  model: ModelConfig;
  system?: string;
  messages: ModelMessage[];
  tools: ToolDefinition[];
  temperature?: number;
  maxOutputTokens?: number;
  /** "none": the tools stay described (the history holds calls of them) but the model must answer. */
  toolChoice?: "auto" | "none";
}

/** Function names providers accept (OpenAI: ^[a-zA-Z0-9_-]{1,64}$); tool ids may hold `.:/`. */
export const modelToolName = (toolId: string) => toolId.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64);

/** A tool's input as JSON Schema: what the model is shown and what the registry stores. */
export function toolJsonSchema(t: ToolDefinition): Record<string, unknown> {
  const { $schema: _, ...schema } = z.toJSONSchema(t.tool.input, { io: "input", unrepresentable: "any" });
  return schema;
}

/**
 * Every event carries a fresh `call_id` (the runtime adds `step_key`): a retried attempt, or a call
 * re-run because the worker died before its result was stored, streams under the same step key
 * again, and the id lets a client drop what the superseded call had streamed.
 */
export async function callModel(call: ModelCall, stream: StepStream): Promise<LlmResponse> {
  const resolved = resolveModelConfig(call.model);
  const callId = randomUUID();
  const publish = (eventType: string, data: Record<string, unknown>) =>
    void stream.publish(eventType, { call_id: callId, ...data });
  const tools: ToolSet = {};
  for (const t of call.tools) {
    // No `execute`: the AI SDK stops at the tool calls, and Spool runs each one as its own step.
    tools[modelToolName(t.id)] = tool({
      description: t.tool.description,
      inputSchema: jsonSchema(toolJsonSchema(t)),
    });
  }
  const result = streamText({
    model: createModel(call.model),
    system: call.system,
    messages: call.messages,
    tools,
    toolChoice: call.toolChoice,
    temperature: call.temperature,
    maxOutputTokens: call.maxOutputTokens,
    // The step's own retries (with backoff, recorded as attempts) replace the client's.
    maxRetries: 0,
  });

  let text = "";
  let finishReason = "unknown";
  const toolCalls: LlmToolCall[] = [];
  let usage = { input_tokens: 0, output_tokens: 0, total_tokens: 0 };
  for await (const part of result.fullStream) {
    switch (part.type) {
      case "text-delta":
        text += part.text;
        publish("agent.text_delta", { delta: part.text });
        break;
      case "tool-call": {
        const tc = { tool_call_id: part.toolCallId, tool_name: part.toolName, input: part.input ?? {} };
        toolCalls.push(tc);
        publish("agent.tool_call", { ...tc });
        break;
      }
      case "finish":
        finishReason = part.finishReason;
        usage = {
          input_tokens: part.totalUsage.inputTokens ?? 0,
          output_tokens: part.totalUsage.outputTokens ?? 0,
          total_tokens:
            part.totalUsage.totalTokens ??
            (part.totalUsage.inputTokens ?? 0) + (part.totalUsage.outputTokens ?? 0),
        };
        break;
      case "error":
        throw asStepError(part.error);
    }
  }
  const response: LlmResponse = {
    text,
    tool_calls: toolCalls,
    usage,
    finish_reason: finishReason,
    provider: resolved.provider,
    model: resolved.model,
    call_id: callId,
  };
  publish("agent.llm_finish", { finish_reason: finishReason, usage, tool_calls: toolCalls.length });
  return response;
}

/** A client error (bad request, bad key) will not heal with retries; overload and network errors may. */
function asStepError(err: unknown): unknown {
  if (APICallError.isInstance(err) && !err.isRetryable) {
    return new NonRetryableError(`model call failed (${err.statusCode ?? "no status"}): ${err.message}`);
  }
  return err;
}
