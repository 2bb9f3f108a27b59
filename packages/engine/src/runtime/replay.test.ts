import {
  NonRetryableError,
  WORKFLOW_BRAND,
  type WorkflowContext,
  type WorkflowDefinition,
} from "@spool/shared";
import { describe, expect, it } from "vitest";
import type { Journal, JournalStep, JournalWait, NewStepResult } from "./journal.js";
import { replay } from "./replay.js";
import { StepResultTooLargeError } from "./result-size.js";

/** An in-memory journal: stored steps in, every write recorded. */
function memoryJournal(steps: JournalStep[] = [], waits: JournalWait[] = []) {
  const stored = new Map(steps.map((s) => [s.stepKey, s]));
  const writes: NewStepResult[] = [];
  const journal: Journal = {
    steps: new Map(stored),
    waits: new Map(waits.map((w) => [w.stepKey, w])),
    eventCursor: async () => 42n,
    async saveStep(step) {
      writes.push(step);
      const winner = stored.get(step.stepKey);
      if (winner?.status === "completed") return winner;
      const row: JournalStep = {
        stepKey: step.stepKey,
        seq: step.seq,
        kind: step.kind,
        status: step.status,
        output: step.output ?? null,
        error: step.error ?? null,
        attempts: step.attempts,
      };
      stored.set(step.stepKey, row);
      return row;
    },
  };
  return { journal, writes, stored };
}

function workflow<I, O>(
  handler: (ctx: WorkflowContext<I>, input: I) => Promise<O>,
): WorkflowDefinition<I, O> {
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
const run = <I, O>(definition: WorkflowDefinition<I, O>, journal: Journal, input: I) =>
  replay({ definition, input, execution, journal, logger });

/** A journal that refuses every write with `error` (a run no longer ours, a database gone). */
const refusingJournal = (error: Error): Journal => ({
  steps: new Map(),
  waits: new Map(),
  eventCursor: async () => 0n,
  saveStep: async () => {
    throw error;
  },
});

const done = (stepKey: string, seq: number, output: unknown): JournalStep => ({
  stepKey,
  seq,
  kind: "run",
  status: "completed",
  output,
  error: null,
  attempts: 1,
});

describe("replay", () => {
  it("runs new steps in order and stores each result", async () => {
    const ran: string[] = [];
    const wf = workflow(async (ctx, n: number) => {
      const a = await ctx.step.run("a", () => {
        ran.push("a");
        return n + 1;
      });
      const b = await ctx.step.run("b", () => {
        ran.push("b");
        return a * 2;
      });
      return { b };
    });
    const { journal, writes } = memoryJournal();
    expect(await run(wf, journal, 1)).toEqual({ type: "completed", result: { b: 4 } });
    expect(ran).toEqual(["a", "b"]);
    expect(writes.map((w) => [w.stepKey, w.seq, w.output])).toEqual([
      ["a", 1, 2],
      ["b", 2, 4],
    ]);
  });

  it("returns stored results without running completed steps", async () => {
    const ran: string[] = [];
    const wf = workflow(async (ctx) => {
      const a = await ctx.step.run("a", () => {
        ran.push("a");
        return "fresh";
      });
      const b = await ctx.step.run("b", () => {
        ran.push("b");
        return `${a}+b`;
      });
      return b;
    });
    const { journal, writes } = memoryJournal([done("a", 1, "stored")]);
    expect(await run(wf, journal, null)).toEqual({ type: "completed", result: "stored+b" });
    expect(ran).toEqual(["b"]);
    expect(writes.map((w) => [w.stepKey, w.seq])).toEqual([["b", 2]]);
  });

  it("adopts the stored result when a duplicate delivery stored first", async () => {
    const { journal } = memoryJournal();
    const racing: Journal = {
      ...journal,
      saveStep: async (s) => ({ ...done(s.stepKey, s.seq, "theirs") }),
    };
    const wf = workflow(async (ctx) => ctx.step.run("a", () => "mine"));
    expect(await run(wf, racing, null)).toEqual({ type: "completed", result: "theirs" });
  });

  it("a reused step key fails the run without retry", async () => {
    const wf = workflow(async (ctx) => {
      await ctx.step.run("a", () => 1);
      await ctx.step.run("a", () => 2);
    });
    const outcome = await run(wf, memoryJournal().journal, null);
    expect(outcome).toMatchObject({ type: "failed", retryable: false });
    expect(outcome.type === "failed" && outcome.error.message).toContain("step key 'a' is used twice");
  });

  it("retries a failing step with backoff, then fails the run naming the step", async () => {
    let calls = 0;
    const wf = workflow(async (ctx) =>
      ctx.step.run(
        "flaky",
        () => {
          calls++;
          throw new Error("boom");
        },
        { retries: 2, backoff: { initial: 5, max: 10 } },
      ),
    );
    const { journal, writes } = memoryJournal();
    const outcome = await run(wf, journal, null);
    expect(calls).toBe(3);
    expect(outcome).toMatchObject({
      type: "failed",
      retryable: true,
      error: { message: "boom", step_key: "flaky" },
    });
    expect(writes).toHaveLength(1);
    expect(writes[0]).toMatchObject({ status: "failed", attempts: 3 });
  });

  it("a NonRetryableError fails at once and is not retryable at run level", async () => {
    let calls = 0;
    const wf = workflow(async (ctx) =>
      ctx.step.run("x", () => {
        calls++;
        throw new NonRetryableError("bad input");
      }),
    );
    const outcome = await run(wf, memoryJournal().journal, null);
    expect(calls).toBe(1);
    expect(outcome).toMatchObject({ type: "failed", retryable: false, error: { name: "NonRetryableError" } });
  });

  it("blocks on a sleep after running the steps before it, reporting the wait", async () => {
    const wf = workflow(async (ctx) => {
      await ctx.step.run("a", () => 1);
      await ctx.step.sleep("nap", "2s");
      return ctx.step.run("b", () => 2);
    });
    const before = Date.now();
    const outcome = await run(wf, memoryJournal().journal, null);
    expect(outcome.type).toBe("blocked");
    if (outcome.type !== "blocked") return;
    expect(outcome.waits).toHaveLength(1);
    expect(outcome.waits[0]).toMatchObject({ stepKey: "nap", seq: 2, kind: "sleep" });
    expect(outcome.waits[0]!.wakeAt!.getTime()).toBeGreaterThanOrEqual(before + 2000);
  });

  it("keeps an open wait's deadline and seq on replay, and continues once it is resolved", async () => {
    const wf = workflow(async (ctx) => {
      await ctx.step.run("a", () => 1);
      const data = await ctx.step.suspend<{ ok: boolean }>("approve", { data: { amount: 5 } });
      return ctx.step.run("b", () => data.ok);
    });
    const wakeAt = new Date("2030-01-01T00:00:00Z");
    const parked = await run(
      wf,
      memoryJournal([done("a", 1, 1)], [{ stepKey: "approve", seq: 2, kind: "suspend", wakeAt }]).journal,
      null,
    );
    expect(parked).toMatchObject({
      type: "blocked",
      waits: [{ stepKey: "approve", seq: 2, wakeAt, payload: { amount: 5 } }],
    });

    const resumed = memoryJournal([
      done("a", 1, 1),
      { ...done("approve", 2, { ok: true }), kind: "suspend" },
    ]);
    expect(await run(wf, resumed.journal, null)).toEqual({ type: "completed", result: true });
    expect(resumed.writes.map((w) => [w.stepKey, w.seq])).toEqual([["b", 3]]);
  });

  it("runs parallel steps concurrently and blocks only when every branch is parked", async () => {
    let concurrent = 0;
    let peak = 0;
    const slow = (v: number) => async () => {
      concurrent++;
      peak = Math.max(peak, concurrent);
      await new Promise((r) => setTimeout(r, 20));
      concurrent--;
      return v;
    };
    const wf = workflow(async (ctx) => {
      const [x, y] = await Promise.all([
        ctx.step.run("x", slow(1)),
        (async () => {
          const z = await ctx.step.run("z", slow(2));
          await ctx.step.waitForEvent("evt", { topic: "t", timeout: "1m" });
          return z;
        })(),
      ]);
      return x + y;
    });
    const { journal, writes } = memoryJournal();
    const outcome = await run(wf, journal, null);
    expect(peak).toBe(2);
    expect(writes.map((w) => w.stepKey).sort()).toEqual(["x", "z"]);
    expect(outcome).toMatchObject({
      type: "blocked",
      waits: [{ stepKey: "evt", kind: "event", topic: "t", afterSequence: 42n }],
    });
  });

  it("a new event wait notes the event cursor when reached; a wait already stored keeps its own", async () => {
    const wf = workflow(async (ctx) =>
      Promise.all([
        ctx.step.waitForEvent("new", { topic: "t" }),
        ctx.step.waitForEvent("open", { topic: "t" }),
      ]),
    );
    const { journal } = memoryJournal([], [{ stepKey: "open", seq: 7, kind: "event", wakeAt: null }]);
    let reads = 0;
    const counted: Journal = {
      ...journal,
      eventCursor: async () => {
        reads++;
        return 42n;
      },
    };
    const outcome = await run(wf, counted, null);
    if (outcome.type !== "blocked") throw new Error(`expected blocked, got ${outcome.type}`);
    const byKey = Object.fromEntries(outcome.waits.map((w) => [w.stepKey, w]));
    expect(byKey.new).toMatchObject({ seq: 8, afterSequence: 42n });
    expect(byKey.open).toMatchObject({ seq: 7, afterSequence: undefined });
    expect(reads).toBe(1);
  });

  it("a wait reached after a step reads its own, later cursor (events from before it was reached do not answer it)", async () => {
    const wf = workflow(async (ctx) =>
      Promise.all([
        ctx.step.waitForEvent("early", { topic: "t" }),
        (async () => {
          await ctx.step.run("long", () => "done");
          return ctx.step.waitForEvent("late", { topic: "t" });
        })(),
      ]),
    );
    const { journal } = memoryJournal();
    let sequence = 100n;
    const moving: Journal = { ...journal, eventCursor: async () => sequence++ };
    const outcome = await run(wf, moving, null);
    if (outcome.type !== "blocked") throw new Error(`expected blocked, got ${outcome.type}`);
    const byKey = Object.fromEntries(outcome.waits.map((w) => [w.stepKey, w.afterSequence]));
    expect(byKey).toEqual({ early: 100n, late: 101n });
  });

  it("a stored failure of a wait (timeout) is thrown to the workflow, which may catch it", async () => {
    const wf = workflow(async (ctx) => {
      try {
        await ctx.step.waitForEvent("evt", { topic: "t" });
        return "got it";
      } catch (err) {
        return `caught ${(err as Error).name}`;
      }
    });
    const journal = memoryJournal([
      {
        stepKey: "evt",
        seq: 1,
        kind: "event",
        status: "failed",
        output: null,
        error: { name: "StepTimeoutError", message: "timed out" },
        attempts: 1,
      },
    ]).journal;
    expect(await run(wf, journal, null)).toEqual({ type: "completed", result: "caught StepTimeoutError" });
  });

  it("now and uuid are recorded once and replayed", async () => {
    const wf = workflow(async (ctx) => ({ at: await ctx.step.now("t"), id: await ctx.step.uuid("u") }));
    const first = memoryJournal();
    const a = await run(wf, first.journal, null);
    const again = await run(wf, { ...first.journal, steps: new Map(first.stored) }, null);
    expect(again).toEqual(a);
  });

  it("reports an abort when the journal says the execution is no longer ours", async () => {
    const { ExecutionAbortedError } = await import("./journal.js");
    const wf = workflow(async (ctx) => {
      try {
        await ctx.step.run("a", () => 1);
      } catch {
        // a workflow that swallows errors still cannot continue an aborted run
      }
      return "continued";
    });
    const journal = refusingJournal(new ExecutionAbortedError("execution was cancelled"));
    expect(await run(wf, journal, null)).toEqual({ type: "aborted", reason: "execution was cancelled" });
  });

  it("after an abort no further step starts, even when the workflow swallows the abort and goes on", async () => {
    const { ExecutionAbortedError } = await import("./journal.js");
    const ran: string[] = [];
    const wf = workflow(async (ctx) => {
      try {
        await ctx.step.run("a", () => ran.push("a"));
      } catch {
        // swallowed: the workflow tries to keep going on a run that is no longer its own
      }
      await ctx.step.run("b", () => ran.push("b"));
      return "continued";
    });
    const journal = refusingJournal(new ExecutionAbortedError("execution was handed to another worker"));
    expect(await run(wf, journal, null)).toEqual({
      type: "aborted",
      reason: "execution was handed to another worker",
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(ran).toEqual(["a"]);
  });

  it("a failing branch is reported only after its running sibling has stored its result", async () => {
    let finishSibling!: () => void;
    const siblingGate = new Promise<void>((r) => {
      finishSibling = r;
    });
    const wf = workflow(async (ctx) =>
      Promise.all([
        ctx.step.run("slow", async () => {
          await siblingGate;
          return "slow done";
        }),
        ctx.step.run(
          "bad",
          () => {
            throw new NonRetryableError("bad input");
          },
          { retries: 0 },
        ),
      ]),
    );
    const { journal, stored } = memoryJournal();
    let outcome: unknown;
    const replaying = run(wf, journal, null).then((o) => {
      outcome = o;
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(outcome).toBeUndefined(); // "slow" is still running: not reported yet
    finishSibling();
    await replaying;
    expect(outcome).toMatchObject({ type: "failed", retryable: false, error: { message: "bad input" } });
    expect(stored.get("slow")).toMatchObject({ status: "completed", output: "slow done" });
  });
});

describe("replay of failures", () => {
  it("a stored failure that the workflow caught replays as that failure, without running the step", async () => {
    let ran = 0;
    const wf = workflow(async (ctx) => {
      try {
        await ctx.step.run("charge", () => {
          ran++;
          return "charged";
        });
      } catch (err) {
        return `handled: ${(err as Error).message}`;
      }
      return "charged";
    });
    const failed: JournalStep = {
      stepKey: "charge",
      seq: 1,
      kind: "run",
      status: "failed",
      output: null,
      error: { name: "Error", message: "card declined" },
      attempts: 4,
    };
    expect(await run(wf, memoryJournal([failed]).journal, null)).toEqual({
      type: "completed",
      result: "handled: card declined",
    });
    expect(ran).toBe(0);
  });
});

describe("infrastructure errors", () => {
  it("a failed journal write is not a step failure: the step's function is not run again", async () => {
    let calls = 0;
    const wf = workflow(async (ctx) => {
      try {
        return await ctx.step.run("pay", () => ++calls, { retries: 3, backoff: { initial: 1 } });
      } catch {
        return "the workflow swallowed it"; // must not turn an outage into a completed run
      }
    });
    const journal = refusingJournal(new Error("connection terminated unexpectedly"));
    await expect(run(wf, journal, null)).rejects.toThrow("connection terminated unexpectedly");
    expect(calls).toBe(1);
  });
});

describe("holding the last write back (holdLastWrite)", () => {
  const holding = <I, O>(definition: WorkflowDefinition<I, O>, journal: Journal, input: I) =>
    replay({ definition, input, execution, journal, logger, holdLastWrite: true });

  it("stores each step before the next one runs, and hands the last one to the completion", async () => {
    const { journal, writes } = memoryJournal();
    const storedWhenRun: string[][] = [];
    const wf = workflow(async (ctx, n: number) => {
      const a = await ctx.step.run("a", () => {
        storedWhenRun.push(writes.map((w) => w.stepKey));
        return n + 1;
      });
      const b = await ctx.step.run("b", () => {
        storedWhenRun.push(writes.map((w) => w.stepKey));
        return a * 2;
      });
      return { b };
    });
    const outcome = await holding(wf, journal, 1);
    expect(storedWhenRun).toEqual([[], ["a"]]);
    expect(writes.map((w) => w.stepKey)).toEqual(["a"]);
    expect(outcome).toMatchObject({
      type: "completed",
      result: { b: 4 },
      lastStep: { stepKey: "b", seq: 2, status: "completed", output: 4, attempts: 1 },
    });
  });

  it("stores the held step before the run blocks or fails", async () => {
    const blocking = memoryJournal();
    const sleeper = workflow(async (ctx) => {
      await ctx.step.run("a", () => 1);
      await ctx.step.sleep("nap", "1h");
    });
    expect((await holding(sleeper, blocking.journal, null)).type).toBe("blocked");
    expect(blocking.writes.map((w) => w.stepKey)).toEqual(["a"]);

    const failing = memoryJournal();
    const thrower = workflow(async (ctx) => {
      await ctx.step.run("a", () => 1);
      throw new Error("the workflow's own bug");
    });
    expect((await holding(thrower, failing.journal, null)).type).toBe("failed");
    expect(failing.writes.map((w) => w.stepKey)).toEqual(["a"]);
  });

  it("stores the held step on the next turn of the event loop when the workflow goes on without a step", async () => {
    const { journal, writes } = memoryJournal();
    let storedDuringTimer: string[] = [];
    const wf = workflow(async (ctx) => {
      await ctx.step.run("a", () => 1);
      // Not a step: a crash meanwhile must not lose "a".
      await new Promise((resolve) => setTimeout(resolve, 5));
      storedDuringTimer = writes.map((w) => w.stepKey);
      return "done";
    });
    const outcome = await holding(wf, journal, null);
    expect(storedDuringTimer).toEqual(["a"]);
    expect(outcome).toEqual({ type: "completed", result: "done" });
  });

  it("writes at once while another step runs (a long sibling must not leave it unstored)", async () => {
    const { journal, writes } = memoryJournal();
    let release = () => {};
    let storedWhenItReturned: string[] = [];
    const wf = workflow(async (ctx) => {
      const slow = ctx.step.run("slow", () => new Promise<number>((r) => (release = () => r(2))));
      const fast = await ctx.step.run("fast", () => 1);
      storedWhenItReturned = writes.map((w) => w.stepKey);
      release();
      return fast + (await slow);
    });
    const outcome = await holding(wf, journal, null);
    expect(storedWhenItReturned).toEqual(["fast"]);
    expect(outcome).toMatchObject({ type: "completed", result: 3, lastStep: { stepKey: "slow" } });
  });

  it("a held step the store refuses as too large is stored as failed, and the run fails for good", async () => {
    const { journal, writes } = memoryJournal();
    const refusing: Journal = {
      ...journal,
      async saveStep(step) {
        if (step.stepKey === "big" && step.status === "completed") {
          throw new StepResultTooLargeError(
            "step 'big' returned 2 MiB of JSON; Spool refused it as too large",
          );
        }
        return journal.saveStep(step);
      },
    };
    let ranAfter = 0;
    const wf = workflow(async (ctx) => {
      await ctx.step.run("big", () => "x");
      await ctx.step.run("after", () => ++ranAfter);
    });
    expect(await holding(wf, refusing, null)).toMatchObject({
      type: "failed",
      retryable: false,
      error: { name: "StepResultTooLargeError", step_key: "big" },
    });
    expect(ranAfter).toBe(0);
    expect(writes.map((w) => [w.stepKey, w.status])).toEqual([["big", "failed"]]);
  });

  it("a held step that lost to another worker's stored result supersedes the replay", async () => {
    const { journal, stored } = memoryJournal();
    const ranB: number[] = [];
    const wf = workflow(async (ctx) => {
      const a = await ctx.step.run("a", () => "mine");
      // Another worker stores its own result for "a" while this one's write is held back.
      stored.set("a", done("a", 1, "theirs"));
      await ctx.step.run("b", () => ranB.push(1));
      return a;
    });
    expect(await holding(wf, journal, null)).toMatchObject({ type: "superseded" });
    expect(ranB).toEqual([]);
  });
});
