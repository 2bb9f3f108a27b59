// The result limit in the replay runtime, as data: a journal that knows the limit (or a store that
// refuses) in, which steps were stored and the run's outcome out.
import { WORKFLOW_BRAND, type WorkflowContext, type WorkflowDefinition } from "@spool/shared";
import { describe, expect, it } from "vitest";
import type { Journal, JournalStep, NewStepResult } from "./journal.js";
import { replay } from "./replay.js";
import { formatBytes, StepResultTooLargeError, stepResultTooLarge } from "./result-size.js";

const LIMIT = 1000;

/** An in-memory journal with a result limit; `refuse` makes its store refuse results over it instead. */
function journalOf(o: { limit?: number; refuse?: number; steps?: JournalStep[] } = {}) {
  const writes: NewStepResult[] = [];
  const journal: Journal = {
    steps: new Map((o.steps ?? []).map((s) => [s.stepKey, s])),
    waits: new Map(),
    eventCursor: async () => 0n,
    maxResultBytes: o.limit,
    async saveStep(step) {
      const bytes = JSON.stringify(step.output ?? null).length;
      if (o.refuse !== undefined && step.status === "completed" && bytes > o.refuse) {
        throw stepResultTooLarge(step.stepKey, bytes, o.refuse);
      }
      writes.push(step);
      return { ...step, output: step.output ?? null, error: step.error ?? null };
    },
  };
  return { journal, writes };
}

function workflow<O>(handler: (ctx: WorkflowContext<unknown>) => Promise<O>): WorkflowDefinition<unknown, O> {
  return { [WORKFLOW_BRAND]: true, kind: "workflow", id: "wf", options: { id: "wf" }, handler };
}

const execution = {
  id: "e1",
  workflowId: "wf",
  attempt: 1,
  queueName: "default",
  parentExecutionId: null,
  rootExecutionId: "e1",
};
const logger = { info() {}, warn() {}, error() {} };
const run = (definition: WorkflowDefinition<unknown, unknown>, journal: Journal) =>
  replay({ definition, input: {}, execution, journal, logger });

/** A string whose JSON (quotes included) is exactly `bytes` long. */
const ofJson = (bytes: number) => "x".repeat(bytes - 2);

describe("result limit", () => {
  it("a step over the limit fails for good, with its result never stored; one at the limit is stored", async () => {
    let calls = 0;
    const { journal, writes } = journalOf({ limit: LIMIT });
    const outcome = await run(
      workflow(async (ctx) => {
        await ctx.step.run("fits", () => ofJson(LIMIT));
        return ctx.step.run("big", () => {
          calls++;
          return ofJson(LIMIT + 1);
        });
      }),
      journal,
    );
    expect(calls).toBe(1); // not retried
    expect(outcome).toMatchObject({
      type: "failed",
      retryable: false,
      error: {
        name: "StepResultTooLargeError",
        message: `step 'big' returned ${formatBytes(LIMIT + 1)} of JSON (1001 bytes), over the ${formatBytes(LIMIT)} limit (SPOOL_MAX_STEP_RESULT_BYTES)`,
        step_key: "big",
        non_retryable: true,
      },
    });
    expect(writes.map((w) => [w.stepKey, w.status, w.output === undefined ? "no output" : "output"])).toEqual(
      [
        ["fits", "completed", "output"],
        ["big", "failed", "no output"],
      ],
    );
    expect(writes[1]?.error).toMatchObject({ name: "StepResultTooLargeError", non_retryable: true });
  });

  it("the workflow may catch it and go on", async () => {
    const { journal } = journalOf({ limit: LIMIT });
    const outcome = await run(
      workflow(async (ctx) => {
        try {
          await ctx.step.run("big", () => ({ rows: Array.from({ length: 500 }, (_, i) => i) }));
          return "unexpected";
        } catch (err) {
          return err instanceof StepResultTooLargeError ? "caught" : String(err);
        }
      }),
      journal,
    );
    expect(outcome).toEqual({ type: "completed", result: "caught" });
  });

  it("a run whose own result is over the limit fails for good; the limit counts UTF-8 bytes", async () => {
    const { journal } = journalOf({ limit: LIMIT });
    // 400 characters, 1200 bytes of UTF-8.
    const outcome = await run(
      workflow(async () => "€".repeat(400)),
      journal,
    );
    expect(outcome).toMatchObject({
      type: "failed",
      retryable: false,
      error: {
        name: "WorkflowResultTooLargeError",
        message: expect.stringMatching(/^workflow 'wf' returned 1\.2 KiB of JSON \(1202 bytes\), over the/),
      },
    });
  });

  it("without a known limit, a store that refuses the result fails the step the same way", async () => {
    const { journal, writes } = journalOf({ refuse: LIMIT });
    const outcome = await run(
      workflow(async (ctx) => ctx.step.run("big", () => ofJson(LIMIT + 10))),
      journal,
    );
    expect(outcome).toMatchObject({
      type: "failed",
      retryable: false,
      error: { name: "StepResultTooLargeError", step_key: "big" },
    });
    expect(writes.map((w) => [w.stepKey, w.status])).toEqual([["big", "failed"]]);
  });

  it("a stored StepResultTooLargeError replays as one: the run still fails for good", async () => {
    const stored: JournalStep = {
      stepKey: "big",
      seq: 1,
      kind: "run",
      status: "failed",
      output: null,
      error: {
        name: "StepResultTooLargeError",
        message: "step 'big' returned too much",
        non_retryable: true,
      },
      attempts: 1,
    };
    const { journal } = journalOf({ limit: LIMIT, steps: [stored] });
    const outcome = await run(
      workflow(async (ctx) => ctx.step.run("big", () => "small now")),
      journal,
    );
    expect(outcome).toMatchObject({
      type: "failed",
      retryable: false,
      error: { name: "StepResultTooLargeError" },
    });
  });
});
