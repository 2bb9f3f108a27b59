// The llm and tool steps of the replay runtime, with plain data: stored steps in; what ran, what
// was stored, reported and published out.
import {
  type ExecutionInfo,
  type LlmResponse,
  type ToolDefinition,
  WORKFLOW_BRAND,
  type WorkflowContext,
  type WorkflowDefinition,
} from "@spool/shared";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { Journal, JournalStep, JournalWait, NewStepResult, StepRecord } from "./journal.js";
import { replay } from "./replay.js";

function memoryJournal(steps: JournalStep[] = [], waits: JournalWait[] = []) {
  const writes: NewStepResult[] = [];
  const journal: Journal = {
    steps: new Map(steps.map((s) => [s.stepKey, s])),
    waits: new Map(waits.map((w) => [w.stepKey, w])),
    eventCursor: async () => 0n,
    async saveStep(step) {
      writes.push(step);
      return { ...step, output: step.output ?? null, error: step.error ?? null };
    },
  };
  return { journal, writes };
}

const stored = (stepKey: string, seq: number, output: unknown, kind = "run"): JournalStep => ({
  stepKey,
  seq,
  kind,
  status: "completed",
  output,
  error: null,
  attempts: 1,
});

const execution: ExecutionInfo = {
  id: "e1",
  workflowId: "wf",
  attempt: 1,
  queueName: "default",
  parentExecutionId: null,
  rootExecutionId: "e1",
};

function run<O>(handler: (ctx: WorkflowContext<unknown>) => Promise<O>, journal: Journal) {
  const definition: WorkflowDefinition<unknown, O> = {
    [WORKFLOW_BRAND]: true,
    kind: "workflow",
    id: "wf",
    options: { id: "wf" },
    handler,
  };
  const reported: StepRecord[] = [];
  const published: { eventType: string; data: Record<string, unknown> }[] = [];
  const logger = { info() {}, warn() {}, error() {} };
  const outcome = replay({
    definition,
    input: null,
    execution,
    journal,
    logger,
    publish: (e) => {
      published.push(e);
    },
    onStepFinished: (r) => reported.push(r),
  });
  return { outcome, reported, published };
}

function tool(
  approval: "always" | "never",
  ran: unknown[],
  fail = false,
): ToolDefinition<{ q: string }, string> {
  return {
    [WORKFLOW_BRAND]: true,
    kind: "tool",
    id: "lookup",
    options: { id: "lookup" },
    handler: async () => "",
    tool: {
      description: "d",
      input: z.object({ q: z.string() }),
      approval,
      execute: async (input, ctx) => {
        ran.push([input, ctx.stepKey]);
        if (fail) throw new Error("lookup is down");
        return `found ${input.q}`;
      },
    },
  };
}

const response: LlmResponse = {
  text: "hi",
  tool_calls: [],
  usage: { input_tokens: 7, output_tokens: 3, total_tokens: 10 },
  finish_reason: "stop",
  provider: "openai-compatible",
  model: "m",
};

describe("llm and tool steps", () => {
  it("an llm step stores the whole response, streams under its key, and reports model and usage", async () => {
    const { journal, writes } = memoryJournal();
    let calls = 0;
    const r = run(
      (ctx) =>
        ctx.step.llm(
          "llm-1",
          async (stream) => {
            calls++;
            stream.publish("agent.text_delta", { delta: "hi" });
            return response;
          },
          { input: { messages: ["m"] } },
        ),
      journal,
    );
    expect(await r.outcome).toEqual({ type: "completed", result: response });
    expect(calls).toBe(1);
    expect(writes).toMatchObject([{ stepKey: "llm-1", kind: "llm", status: "completed", output: response }]);
    expect(r.published).toEqual([
      { eventType: "agent.text_delta", data: { step_key: "llm-1", delta: "hi" } },
    ]);
    expect(r.reported).toMatchObject([
      {
        stepKey: "llm-1",
        kind: "llm",
        input: { messages: ["m"] },
        attributes: { "llm.model": "m", "llm.usage.input_tokens": 7, "llm.usage.total_tokens": 10 },
      },
    ]);
  });

  it("a stored llm step is never called again, reported or streamed", async () => {
    const { journal, writes } = memoryJournal([stored("llm-1", 1, response, "llm")]);
    const r = run(
      (ctx) => ctx.step.llm("llm-1", async () => Promise.reject(new Error("paid twice"))),
      journal,
    );
    expect(await r.outcome).toEqual({ type: "completed", result: response });
    expect(writes).toEqual([]);
    expect(r.reported).toEqual([]);
    expect(r.published).toEqual([]);
  });

  it("toolOutcome stores a failure as the step's result (no retries), with the error on the span", async () => {
    const ran: unknown[] = [];
    const { journal, writes } = memoryJournal();
    const r = run((ctx) => ctx.step.toolOutcome("t-1", tool("never", ran, true), { q: "x" }), journal);
    const failure = { ok: false, rejected: false, error: { name: "Error", message: "lookup is down" } };
    expect(await r.outcome).toEqual({ type: "completed", result: failure });
    expect(ran).toEqual([[{ q: "x" }, "t-1"]]);
    expect(writes).toMatchObject([{ stepKey: "t-1", kind: "tool", status: "completed", attempts: 1 }]);
    expect(r.reported[0]).toMatchObject({ input: { q: "x" }, error: { message: "lookup is down" } });
  });

  it("invalid tool input is a failure the model can read, and the tool does not run", async () => {
    const ran: unknown[] = [];
    const r = run(
      (ctx) => ctx.step.toolOutcome("t-1", tool("never", ran), { q: 42 } as never),
      memoryJournal().journal,
    );
    expect(await r.outcome).toMatchObject({
      type: "completed",
      result: { ok: false, error: { message: expect.stringContaining("invalid input for tool 'lookup'") } },
    });
    expect(ran).toEqual([]);
  });

  it("approval 'always' parks on <key>:approval before running the tool", async () => {
    const ran: unknown[] = [];
    const r = run(
      (ctx) => ctx.step.toolOutcome("t-1", tool("always", ran), { q: "x" }),
      memoryJournal().journal,
    );
    expect(await r.outcome).toMatchObject({
      type: "blocked",
      waits: [
        { stepKey: "t-1:approval", kind: "suspend", payload: { type: "tool_approval", tool_id: "lookup" } },
      ],
    });
    expect(ran).toEqual([]);
  });

  it("a rejected approval returns why without running; ctx.step.tool throws ToolRejectedError", async () => {
    const ran: unknown[] = [];
    const rejected = stored("t-1:approval", 1, { approved: false, feedback: "not today" }, "suspend");
    const outcome = run(
      (ctx) => ctx.step.toolOutcome("t-1", tool("always", ran), { q: "x" }),
      memoryJournal([rejected]).journal,
    );
    expect(await outcome.outcome).toMatchObject({
      type: "completed",
      result: {
        ok: false,
        rejected: true,
        error: { message: expect.stringContaining("Feedback: not today") },
      },
    });
    const thrown = run(
      (ctx) => ctx.step.tool("t-1", tool("always", ran), { q: "x" }),
      memoryJournal([rejected]).journal,
    );
    expect(await thrown.outcome).toMatchObject({
      type: "failed",
      retryable: false,
      error: { name: "ToolRejectedError" },
    });
    expect(ran).toEqual([]);
  });

  it("an approved call runs the tool once", async () => {
    const ran: unknown[] = [];
    const approved = stored("t-1:approval", 1, { approved: true }, "suspend");
    const r = run(
      (ctx) => ctx.step.tool("t-1", tool("always", ran), { q: "x" }),
      memoryJournal([approved]).journal,
    );
    expect(await r.outcome).toEqual({ type: "completed", result: "found x" });
    expect(ran).toHaveLength(1);
  });
});
