import {
  type AgentConfig,
  type AgentDefinition,
  type AgentInput,
  type AgentResult,
  type LlmResponse,
  type LlmToolCall,
  type ModelConfig,
  NonRetryableError,
  type ToolDefinition,
  type ToolOutcome,
  WORKFLOW_BRAND,
  type WorkflowContext,
} from "@spool/shared";
import type { ModelMessage, ToolResultPart } from "ai";
import { callModel, modelToolName } from "./llm/call-model.js";

export interface AgentOptions {
  id: string;
  model: ModelConfig;
  systemPrompt: string;
  // biome-ignore lint/suspicious/noExplicitAny: a list of tools with different input and output types
  tools?: ToolDefinition<any, any>[];
  temperature?: number;
  maxOutputTokens?: number;
  /** Most LLM calls per run (default 10); the last one is made with tools withheld, so it answers. */
  maxSteps?: number;
  queue?: string;
  retries?: number;
  description?: string;
}

const ID_PATTERN = /^[A-Za-z0-9._:/-]{1,200}$/;
/** An LLM step retries transient failures (overload, network) on top of the run's own retries. */
const LLM_STEP_RETRIES = 2;

/**
 * Defines an agent: a workflow (kind "agent") that loops "call the model, run the tools it asked
 * for" until the model answers without tool calls, or until the `maxSteps`-th LLM call, made with
 * tools withheld so that it answers (`stopped: "max_steps"`). Each LLM call is a durable step
 * (`llm-<n>`), each tool call another (`tool-<n>-<i>-<name>`, in parallel), so a crash resumes
 * after the last finished call and never pays for it twice. Run it with
 * `POST /workflows/{id}/run` and `input: {message}` or `input: {messages: [...]}`.
 */
export function defineAgent(options: AgentOptions): AgentDefinition {
  if (!ID_PATTERN.test(options.id)) {
    throw new TypeError(`agent id '${options.id}' must be 1-200 characters of A-Z a-z 0-9 . _ : / -`);
  }
  const maxSteps = options.maxSteps ?? 10;
  if (!Number.isInteger(maxSteps) || maxSteps < 1) {
    throw new TypeError(`agent '${options.id}': maxSteps must be a whole number >= 1`);
  }
  const tools = options.tools ?? [];
  const byName = new Map<string, ToolDefinition>();
  for (const t of tools) {
    const name = modelToolName(t.id);
    if (byName.has(name)) throw new TypeError(`agent '${options.id}': two tools are named '${name}'`);
    byName.set(name, t);
  }
  const agent: AgentConfig = {
    model: options.model,
    systemPrompt: options.systemPrompt,
    tools,
    temperature: options.temperature,
    maxOutputTokens: options.maxOutputTokens,
    maxSteps,
  };
  return Object.freeze({
    [WORKFLOW_BRAND]: true as const,
    kind: "agent" as const,
    id: options.id,
    options: {
      id: options.id,
      queue: options.queue,
      retries: options.retries,
      description: options.description,
    },
    agent,
    handler: (ctx: WorkflowContext<AgentInput>, input: AgentInput) => runAgent(ctx, agent, byName, input),
  });
}

async function runAgent(
  ctx: WorkflowContext<AgentInput>,
  agent: AgentConfig,
  byName: Map<string, ToolDefinition>,
  input: AgentInput,
): Promise<AgentResult> {
  const messages = toMessages(input);
  const calls: AgentResult["tool_calls"] = [];
  const usage = { input_tokens: 0, output_tokens: 0, total_tokens: 0 };
  for (let turn = 1; ; turn++) {
    // The last call the budget allows must answer: with tools offered it could end in tool calls
    // that nobody runs, and no text. Tools stay described, as the history refers to them.
    const forced = turn >= agent.maxSteps && agent.tools.length > 0;
    const stopped = forced ? "max_steps" : "final_answer";
    const isLast = (r: LlmResponse) => r.tool_calls.length === 0 || forced;
    const sent = [...messages];
    const res: LlmResponse = await ctx.step.llm(
      `llm-${turn}`,
      async (stream) => {
        const r = await callModel(
          {
            model: agent.model,
            system: agent.systemPrompt,
            messages: sent,
            tools: agent.tools,
            temperature: agent.temperature,
            maxOutputTokens: agent.maxOutputTokens,
            toolChoice: forced ? "none" : "auto",
          },
          stream,
        );
        // Published from inside the step, so a replay never announces the end twice, and awaited
        // (the event is written before the step's result is stored), so a worker dying in between
        // cannot lose it: replay would not publish it again. If the worker dies before the result
        // is stored, the call is made again and announces its own end under a new call_id.
        if (isLast(r)) {
          await stream.publish(
            "agent.finish",
            {
              call_id: r.call_id,
              text: r.text,
              stopped,
              usage: addUsage({ ...usage }, r.usage),
            },
            { now: true },
          );
        }
        return r;
      },
      { input: { system: agent.systemPrompt, messages: sent }, retries: LLM_STEP_RETRIES },
    );
    addUsage(usage, res.usage);
    // Tool calls on a forced turn (a model ignoring tool choice "none") are dropped: the model
    // could not read their results.
    if (isLast(res)) return { text: res.text, tool_calls: calls, usage, stopped };

    messages.push({
      role: "assistant",
      content: [
        ...(res.text ? [{ type: "text" as const, text: res.text }] : []),
        ...res.tool_calls.map((tc) => ({
          type: "tool-call" as const,
          toolCallId: tc.tool_call_id,
          toolName: tc.tool_name,
          input: tc.input,
        })),
      ],
    });
    const outcomes = await Promise.all(
      res.tool_calls.map((tc, i) => callTool(ctx, byName, `tool-${turn}-${i + 1}-${tc.tool_name}`, tc)),
    );
    messages.push({ role: "tool", content: res.tool_calls.map((tc, i) => toolResult(tc, outcomes[i]!)) });
    res.tool_calls.forEach((tc, i) => {
      const o = outcomes[i]!;
      calls.push(o.ok ? { ...tc, output: o.output } : { ...tc, error: o.error.message });
    });
  }
}

async function callTool(
  ctx: WorkflowContext<AgentInput>,
  byName: Map<string, ToolDefinition>,
  key: string,
  call: LlmToolCall,
): Promise<ToolOutcome<unknown>> {
  const t = byName.get(call.tool_name);
  if (!t) {
    const known = [...byName.keys()].join(", ") || "none";
    return {
      ok: false,
      rejected: false,
      error: { name: "UnknownToolError", message: `there is no tool '${call.tool_name}' (tools: ${known})` },
    };
  }
  return ctx.step.toolOutcome(key, t, call.input);
}

/** What the model reads back: the output, the error, or why a person rejected the call. */
function toolResult(call: LlmToolCall, outcome: ToolOutcome<unknown>): ToolResultPart {
  const base = { type: "tool-result" as const, toolCallId: call.tool_call_id, toolName: call.tool_name };
  if (outcome.ok) return { ...base, output: { type: "json", value: (outcome.output ?? null) as never } };
  if (outcome.rejected)
    return { ...base, output: { type: "execution-denied", reason: outcome.error.message } };
  return {
    ...base,
    output: { type: "error-text", value: `${outcome.error.name}: ${outcome.error.message}` },
  };
}

function toMessages(input: AgentInput): ModelMessage[] {
  const i = (input ?? {}) as Partial<{ message: unknown; messages: unknown }>;
  if (typeof i.message === "string" && i.message.length > 0) return [{ role: "user", content: i.message }];
  if (Array.isArray(i.messages) && i.messages.length > 0) {
    for (const m of i.messages) {
      const role = (m as { role?: unknown })?.role;
      if (!["system", "user", "assistant", "tool"].includes(String(role)) || !("content" in (m as object))) {
        throw new NonRetryableError(
          "agent input: every message needs a role (user|assistant|system|tool) and content",
        );
      }
    }
    return i.messages as ModelMessage[];
  }
  throw new NonRetryableError(
    'agent input must be {"message": "..."} or {"messages": [{"role", "content"}, ...]}',
  );
}

function addUsage(total: AgentResult["usage"], add: AgentResult["usage"]): AgentResult["usage"] {
  total.input_tokens += add.input_tokens;
  total.output_tokens += add.output_tokens;
  total.total_tokens += add.total_tokens;
  return total;
}
