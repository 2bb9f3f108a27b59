// The workflow authoring contract: what a workflow function receives. Implemented by the engine's
// replay runtime (packages/engine/src/runtime); re-exported to users by @spool/sdk.
import type { z } from "zod";
import type { Duration } from "./duration.js";
import { NonRetryableError } from "./errors.js";

export interface BackoffOptions {
  /** First delay (default 1s). */
  initial?: Duration;
  /** Upper bound of a delay (default 1m). */
  max?: Duration;
  /** Growth per attempt (default 2). */
  factor?: number;
}

export interface StepRunOptions {
  /** Extra attempts after the first (default 3). A NonRetryableError skips them. */
  retries?: number;
  backoff?: BackoffOptions;
}

export interface WaitForEventOptions {
  topic: string;
  /** Fail the step with a StepTimeoutError after this long. Default: wait forever. */
  timeout?: Duration;
  /** Only an event whose `data` contains these key/values (deep, by equality) resolves the wait. */
  match?: Record<string, unknown>;
}

export interface SuspendOptions {
  /** Shown on the execution while it is suspended (e.g. what needs approval). */
  data?: unknown;
  /** Fail the step with a StepTimeoutError when nobody resumes in time. */
  timeout?: Duration;
}

export interface ReceivedEvent<T = Record<string, unknown>> {
  id: string;
  sequence_id: number;
  topic: string;
  event_type: string | null;
  data: T;
  created_at: string;
}

export interface StepApi {
  /** Runs `fn` once per execution: its result is stored and returned on every replay. */
  run<T>(key: string, fn: () => T | Promise<T>, options?: StepRunOptions): Promise<Awaited<T>>;
  /** A durable timer: the worker is freed while it runs. */
  sleep(key: string, duration: Duration): Promise<void>;
  sleepUntil(key: string, until: Date | string): Promise<void>;
  waitForEvent<T = Record<string, unknown>>(
    key: string,
    options: WaitForEventOptions,
  ): Promise<ReceivedEvent<T>>;
  /** Parks the run (status `suspended`) until `POST /executions/{id}/resume`; returns the resume `data`. */
  suspend<T = Record<string, unknown>>(key: string, options?: SuspendOptions): Promise<T>;
  /** Starts a child run and returns its result; a failed child throws ChildWorkflowError. */
  invoke<I, O>(key: string, workflow: WorkflowDefinition<I, O>, input: I): Promise<O>;
  /** The time, recorded once: deterministic across replays. */
  now(key: string): Promise<Date>;
  /** A random UUID, recorded once. */
  uuid(key: string): Promise<string>;
  /**
   * An LLM call as a step (kind "llm"): `call` runs once and its full response (text, tool calls,
   * usage) is stored, so a crash or a replay never pays for a finished call again. `call` gets a
   * writer that streams live events (text deltas, tool calls) on the run's topic.
   */
  llm<T extends LlmResponse>(
    key: string,
    call: (stream: StepStream) => Promise<T>,
    options?: LlmStepOptions,
  ): Promise<T>;
  /**
   * Runs a tool as a step (kind "tool"). A tool with `approval: "always"` first suspends the run
   * (step `<key>:approval`) until `resume` with `{approved, feedback?}`; rejected, it throws
   * ToolRejectedError without running the tool.
   */
  tool<I, O>(key: string, tool: ToolDefinition<I, O>, input: I, options?: StepRunOptions): Promise<O>;
  /**
   * Like `tool`, but a failure or a rejection is returned (and stored) instead of thrown: what an
   * agent feeds back to its model.
   */
  toolOutcome<I, O>(
    key: string,
    tool: ToolDefinition<I, O>,
    input: I,
    options?: StepRunOptions,
  ): Promise<ToolOutcome<O>>;
  /** Runs an agent as a child run (its own steps, stream and trace spans) and returns its result. */
  agent<I, O>(key: string, agent: WorkflowDefinition<I, O>, input: I): Promise<O>;
}

/**
 * Live events of a running step, published on the run's topic `workflow/<workflow_id>/<execution_id>`
 * with the step's `step_key` added. They are batched (one write per 50 ms); `publish` returns a
 * promise that settles once the event's batch is written, and `{ now: true }` writes it at once. A
 * step awaits it for an event a crash must not lose (written before the step's result is stored).
 * A failed write is logged, not thrown: failing the step would pay for its LLM call again.
 */
export interface StepStream {
  publish(
    eventType: string,
    data: Record<string, unknown>,
    options?: { now?: boolean },
  ): void | Promise<void>;
}

export interface LlmUsage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
}

export interface LlmToolCall {
  tool_call_id: string;
  tool_name: string;
  input: unknown;
}

/** What an `llm` step stores: the whole model response, enough to continue without calling again. */
export interface LlmResponse {
  text: string;
  tool_calls: LlmToolCall[];
  usage: LlmUsage;
  finish_reason: string;
  provider?: string;
  model?: string;
  /**
   * Id of the model call that produced this response; its live events carry the same `call_id`.
   * Events of the step with another `call_id` came from an attempt that was retried or lost.
   */
  call_id?: string;
}

export interface LlmStepOptions extends StepRunOptions {
  /** What was sent (e.g. the messages): recorded on the trace span, not in the step result. */
  input?: unknown;
}

export type ToolOutcome<O> =
  | { ok: true; output: O }
  | { ok: false; rejected: boolean; error: { name: string; message: string } };

export interface ToolOptions<I> {
  id: string;
  description: string;
  input: z.ZodType<I>;
  /** "always": every call waits for a person to `resume` the run with `{approved, feedback?}`. */
  approval?: "always" | "never";
  queue?: string;
  retries?: number;
}

/** A tool is also a workflow (kind "tool"), so it can run on its own through `/workflows/{id}/run`. */
export interface ToolDefinition<I = unknown, O = unknown> extends WorkflowDefinition<I, O> {
  readonly kind: "tool";
  readonly tool: {
    readonly description: string;
    readonly input: z.ZodType<I>;
    readonly approval: "always" | "never";
    readonly execute: (input: I, ctx: ToolContext) => Promise<O>;
  };
}

/** What a tool's function gets besides its input. */
export interface ToolContext {
  execution: ExecutionInfo;
  /** The step this call is (unique in the run): a good idempotency key for the side effect. */
  stepKey: string;
}

export const isToolDefinition = (value: unknown): value is ToolDefinition =>
  isWorkflowDefinition(value) && value.kind === "tool" && "tool" in value;

/** A tool call that needed approval was rejected; the tool did not run. */
export class ToolRejectedError extends NonRetryableError {
  override name = "ToolRejectedError";
}

/** Which model an agent talks to; keys come from the environment, never from here. */
export interface ModelConfig {
  provider: "openai" | "anthropic" | "openai-compatible";
  model: string;
  /**
   * "openai-compatible": required, default `SPOOL_LLM_BASE_URL`. "openai" and "anthropic": default
   * the provider's own URL (never `SPOOL_LLM_BASE_URL`, which would send their key to another host).
   */
  baseUrl?: string;
  /** Environment variable holding the key (default: OPENAI_API_KEY / ANTHROPIC_API_KEY / SPOOL_LLM_API_KEY). */
  apiKeyEnv?: string;
}

export interface AgentConfig {
  model: ModelConfig;
  systemPrompt: string;
  tools: ToolDefinition[];
  temperature?: number;
  maxOutputTokens?: number;
  /** Most LLM calls in one run (default 10). */
  maxSteps: number;
}

/** An agent is a workflow (kind "agent") whose loop runs each LLM call and tool call as a step. */
export interface AgentDefinition<I = AgentInput, O = AgentResult> extends WorkflowDefinition<I, O> {
  readonly kind: "agent";
  readonly agent: AgentConfig;
}

export const isAgentDefinition = (value: unknown): value is AgentDefinition =>
  isWorkflowDefinition(value) && value.kind === "agent" && "agent" in value;

export interface AgentMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: unknown;
}

/** Agent input over REST: one user message, or a whole conversation (AI SDK model messages). */
export type AgentInput = { message: string } | { messages: AgentMessage[] };

export interface AgentResult {
  text: string;
  tool_calls: (LlmToolCall & { output?: unknown; error?: string })[];
  usage: LlmUsage;
  /**
   * "final_answer": the model answered on its own. "max_steps": the budget ran out, so the last
   * allowed LLM call was made with tools withheld (tool choice "none") and its text is the answer.
   */
  stopped: "final_answer" | "max_steps";
}

/** What a person answers (through `resume`) to a tool call that needs approval. */
export interface ToolApproval {
  approved: boolean;
  feedback?: string;
}

export interface ExecutionInfo {
  id: string;
  workflowId: string;
  attempt: number;
  queueName: string;
  parentExecutionId: string | null;
  rootExecutionId: string;
}

export interface WorkflowLogger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export interface WorkflowContext<I = unknown> {
  input: I;
  execution: ExecutionInfo;
  step: StepApi;
  /** Logs tagged with the execution; suppressed while replaying completed steps. */
  log: WorkflowLogger;
}

export interface TriggerOptions {
  topic: string;
  batchSize?: number;
  batchTimeoutSeconds?: number | null;
  queue?: string;
}

export interface ScheduleOptions {
  cron: string;
  timezone?: string;
  key?: string;
  input?: Record<string, unknown>;
}

export interface WorkflowOptions<I> {
  id: string;
  /** Queue its runs go to unless a run names another (default "default"). */
  queue?: string;
  /** Run-level retries after the first attempt (default 0). */
  retries?: number;
  inputSchema?: z.ZodType<I>;
  trigger?: TriggerOptions;
  schedule?: ScheduleOptions;
  description?: string;
}

export const WORKFLOW_BRAND = Symbol.for("spool.workflow");

export interface WorkflowDefinition<I = unknown, O = unknown> {
  readonly [WORKFLOW_BRAND]: true;
  readonly kind: "workflow" | "agent" | "tool";
  readonly id: string;
  readonly options: WorkflowOptions<I>;
  readonly handler: (ctx: WorkflowContext<I>, input: I) => Promise<O>;
}

export const isWorkflowDefinition = (value: unknown): value is WorkflowDefinition =>
  typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[WORKFLOW_BRAND] === true;

export const QUEUE_BRAND = Symbol.for("spool.queue");

export interface QueueDefinition {
  readonly [QUEUE_BRAND]: true;
  readonly name: string;
  /** Most executions of this queue running at once, across every worker replica. */
  readonly concurrencyLimit: number | null;
}

export const isQueueDefinition = (value: unknown): value is QueueDefinition =>
  typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[QUEUE_BRAND] === true;
