// The tool and LLM steps of the replay runtime: tool approval, input validation, captured failures,
// and what each step records on its trace span. Kept apart from replay.ts, which owns the mechanics.
import {
  type ExecutionInfo,
  type LlmResponse,
  NonRetryableError,
  type StepRunOptions,
  serializeError,
  type ToolApproval,
  type ToolContext,
  type ToolDefinition,
  type ToolOutcome,
  ToolRejectedError,
} from "@spool/shared";
import type { StepTrace } from "./journal.js";

/** What the runtime lends a tool step: its step primitive (kind "tool") and its suspend. */
export interface ToolStepHooks {
  execution: ExecutionInfo;
  runStep<T>(key: string, fn: () => Promise<T>, opts: StepRunOptions, trace: StepTrace): Promise<T>;
  suspend<T>(key: string, data: unknown): Promise<T>;
}

export type ToolStepOutcome<O> = ToolOutcome<O> & { thrown?: unknown };

/**
 * Runs one tool call. With approval "always" the run first suspends on `<key>:approval`; a rejection
 * never runs the tool. `capture` (agents) stores a failure as the step's result instead of throwing,
 * so it is durable and replayed like any result; the model sees it and may try again itself, which
 * is why captured calls have no step-level retries.
 */
export async function runToolStep<I, O>(
  hooks: ToolStepHooks,
  key: string,
  tool: ToolDefinition<I, O>,
  input: I,
  opts: StepRunOptions = {},
  capture = false,
): Promise<ToolStepOutcome<O>> {
  if (tool.tool.approval === "always") {
    const decision = await hooks.suspend<Partial<ToolApproval> | null>(`${key}:approval`, {
      type: "tool_approval",
      tool_id: tool.id,
      step_key: key,
      input,
    });
    if (decision?.approved !== true) {
      const feedback = typeof decision?.feedback === "string" ? decision.feedback : "";
      const err = new ToolRejectedError(
        `the reviewer rejected this call of tool '${tool.id}', so it did not run${feedback ? `. Feedback: ${feedback}` : ""}`,
      );
      return { ok: false, rejected: true, error: { name: err.name, message: err.message }, thrown: err };
    }
  }
  const attributes = { tool_id: tool.id };
  const toolCtx = { execution: hooks.execution, stepKey: key };
  if (!capture) {
    try {
      const output = await hooks.runStep(key, () => executeTool(tool, input, toolCtx), opts, {
        input,
        describe: () => ({ attributes }),
      });
      return { ok: true, output };
    } catch (err) {
      return { ok: false, rejected: false, error: { name: "Error", message: String(err) }, thrown: err };
    }
  }
  return hooks.runStep(
    key,
    async (): Promise<ToolOutcome<O>> => {
      try {
        return { ok: true, output: await executeTool(tool, input, toolCtx) };
      } catch (err) {
        const { name, message } = serializeError(err);
        return { ok: false, rejected: false, error: { name, message } };
      }
    },
    { ...opts, retries: 0 },
    {
      input,
      describe: (output) => {
        const o = output as ToolOutcome<O>;
        return { attributes, error: o.ok ? undefined : { ...o.error } };
      },
    },
  );
}

async function executeTool<I, O>(tool: ToolDefinition<I, O>, input: I, ctx: ToolContext): Promise<O> {
  const parsed = tool.tool.input.safeParse(input);
  if (!parsed.success) {
    const fields = parsed.error.issues.map((i) => `${i.path.join(".") || "(input)"}: ${i.message}`);
    throw new NonRetryableError(`invalid input for tool '${tool.id}': ${fields.join("; ")}`);
  }
  return tool.tool.execute(parsed.data, ctx);
}

/** An LLM step's span: what was sent, and the model and token usage of the stored response. */
export function llmTrace(input: unknown): StepTrace {
  return {
    input,
    describe: (output) => {
      const r = output as Partial<LlmResponse> | null;
      return {
        attributes: {
          "llm.provider": r?.provider ?? null,
          "llm.model": r?.model ?? null,
          "llm.finish_reason": r?.finish_reason ?? null,
          "llm.usage.input_tokens": r?.usage?.input_tokens ?? null,
          "llm.usage.output_tokens": r?.usage?.output_tokens ?? null,
          "llm.usage.total_tokens": r?.usage?.total_tokens ?? null,
          "llm.tool_calls": r?.tool_calls?.length ?? 0,
        },
      };
    },
  };
}
