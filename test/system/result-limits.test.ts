// The result limit (SPOOL_MAX_STEP_RESULT_BYTES) wherever a result is stored: an in-cluster worker
// (configured through its environment), Spool's SDK remote worker, and a raw protocol worker (a Polos
// SDK's), whose results the API stores. An oversized result is never stored; its step and run fail
// with an error that says why, once (no retry runs the step again).
import { fileURLToPath } from "node:url";
import { setMaxResultBytes } from "@spool/engine/runner";
import { DEFAULT_MAX_STEP_RESULT_BYTES } from "@spool/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RawProtocolWorker } from "../remote/raw-worker.js";
import { type System, startSystem } from "./harness.js";

const RESULT_SIZES = fileURLToPath(new URL("../fixtures/result-sizes.ts", import.meta.url));
const LIMIT = 10 * 1024;
const jsonOf = (bytes: number) => "x".repeat(bytes - 2);
const over = (what: string, bytes: number) =>
  `${what} returned ${Math.round((bytes / 1024) * 10) / 10} KiB of JSON (${bytes} bytes), over the 10 KiB limit (SPOOL_MAX_STEP_RESULT_BYTES)`;

describe("results over SPOOL_MAX_STEP_RESULT_BYTES", () => {
  let sys: System;
  let raw: RawProtocolWorker;
  /** What the API answered the raw worker's oversized writes. */
  const answers: Record<string, { status: number; body: unknown }> = {};
  const answer = async (name: string, res: Response) => {
    answers[name] = { status: res.status, body: await res.json() };
  };
  const finished = (id: string) => sys.client.executions.waitForResult(id, { timeoutMs: 30_000 });

  beforeAll(async () => {
    // The API of this system runs in this process: it stores what remote workers report.
    setMaxResultBytes(LIMIT);
    // A database of its own: other files' schedulers would take the raw worker (no heartbeats) offline.
    sys = await startSystem({ ownDatabase: true, workflowsModule: RESULT_SIZES });
    await sys.startWorker({ SPOOL_MAX_STEP_RESULT_BYTES: String(LIMIT) });
    await sys.startRemoteWorker();
    raw = new RawProtocolWorker({
      apiUrl: sys.apiUrl,
      apiKey: sys.apiKey,
      projectId: sys.projectId,
      deploymentId: "raw",
      scripts: {
        "raw-sized": async (ctx) => {
          await answer("step", await ctx.saveStep("big", jsonOf(20_000)));
          await answer("steps", await ctx.call("GET", `/internal/executions/${ctx.push.execution_id}/steps`));
          await answer("complete", await ctx.complete(jsonOf(20_000)));
          await ctx.fail("the result was refused", false);
        },
      },
    });
    await raw.listen();
    await raw.register([{ id: "raw-sized" }]);
  });
  afterAll(async () => {
    setMaxResultBytes(DEFAULT_MAX_STEP_RESULT_BYTES);
    await raw?.close();
    await sys?.stop();
  });

  describe("an in-cluster worker (its environment sets the limit)", () => {
    it("a step over the limit fails, with its error on the step and the run, once; nothing of it is stored", async () => {
      const { execution_id } = await sys.client.run("sized", { stepBytes: 20_000 });
      const done = await finished(execution_id);
      const error = { name: "StepResultTooLargeError", message: over("step 'payload'", 20_000) };
      expect(done).toMatchObject({
        status: "failed",
        attempt: 1,
        result: null,
        error: { ...error, step_key: "payload" },
      });
      expect(await sys.client.executions.steps(execution_id)).toMatchObject([
        { step_key: "payload", status: "failed", output: null, attempts: 1, error },
      ]);
    });

    it("a step at the limit is stored and the run completes", async () => {
      const { execution_id } = await sys.client.run("sized", { stepBytes: LIMIT });
      expect(await finished(execution_id)).toMatchObject({
        status: "completed",
        result: { length: LIMIT - 2 },
      });
      const steps = await sys.client.executions.steps(execution_id);
      expect(steps.map((s) => [s.step_key, s.status])).toEqual([
        ["payload", "completed"],
        ["after", "completed"],
      ]);
      expect(steps[0]?.output).toBe(jsonOf(LIMIT));
    });

    it("a run whose own result is over the limit fails, and stores no result", async () => {
      const { execution_id } = await sys.client.run("sized", { stepBytes: 100, resultBytes: 20_000 });
      expect(await finished(execution_id)).toMatchObject({
        status: "failed",
        attempt: 1,
        result: null,
        error: { name: "WorkflowResultTooLargeError", message: over("workflow 'sized'", 20_000) },
      });
    });
  });

  describe("Spool's SDK remote worker (the API's limit)", () => {
    it("a step over the limit fails the step and the run once, with the API's reason", async () => {
      const { execution_id } = await sys.client.run("r-sized", { stepBytes: 20_000 });
      const error = { name: "StepResultTooLargeError", message: over("step 'payload'", 20_000) };
      expect(await finished(execution_id)).toMatchObject({
        status: "failed",
        attempt: 1,
        error: { ...error, step_key: "payload" },
      });
      expect(await sys.client.executions.steps(execution_id)).toMatchObject([
        { step_key: "payload", status: "failed", output: null, attempts: 1, error },
      ]);
    });

    it("a run whose own result is over the limit fails; one under it completes", async () => {
      const big = await sys.client.run("r-sized", { stepBytes: 100, resultBytes: 20_000 });
      expect(await finished(big.execution_id)).toMatchObject({
        status: "failed",
        attempt: 1,
        result: null,
        error: { name: "WorkflowResultTooLargeError", message: over("workflow 'r-sized'", 20_000) },
      });
      const small = await sys.client.run("r-sized", { stepBytes: 5000 });
      expect(await finished(small.execution_id)).toMatchObject({
        status: "completed",
        result: { length: 4998 },
      });
    });
  });

  it("a raw protocol worker's oversized step and result get 413 PAYLOAD_TOO_LARGE, and nothing is stored", async () => {
    const { execution_id } = await sys.client.run("raw-sized", {});
    expect(await finished(execution_id)).toMatchObject({ status: "failed", result: null });
    expect(answers.step).toEqual({
      status: 413,
      body: {
        error: over("step 'big'", 20_000),
        error_type: "PAYLOAD_TOO_LARGE",
        details: { error_name: "StepResultTooLargeError", step_key: "big", bytes: 20_000, max_bytes: LIMIT },
      },
    });
    expect(answers.steps).toMatchObject({ status: 200, body: { steps: [] } });
    expect(answers.complete).toMatchObject({
      status: 413,
      body: {
        error: over("workflow 'raw-sized'", 20_000),
        error_type: "PAYLOAD_TOO_LARGE",
        details: { error_name: "WorkflowResultTooLargeError" },
      },
    });
    expect(await sys.client.executions.steps(execution_id)).toEqual([]);
  });
});
