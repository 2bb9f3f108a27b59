// A new run's first job starts it with its first step's write (one commit less per run). These check
// what that must not change: the run is taken only as its job was made, a redelivered job's start
// fences the first worker, a cancel still stops the run, nothing of a run that moved on is lost, and
// only what the API vouched for (a lane without a limit, a small input) is deferred.
import { randomUUID } from "node:crypto";
import { createLogger, WORKFLOW_BRAND, type WorkflowContext, type WorkflowDefinition } from "@spool/shared";
import { describe, expect, it } from "vitest";
import { CONSUMER_NAME, type JobData, runJobId } from "../../src/dispatch/dispatcher.js";
import {
  DeferredStart,
  insertNewRunOn,
  insertTaking,
  type NewRun,
} from "../../src/execution/deferred-start.js";
import { insertSentRun } from "../../src/in-cluster/direct-runs.js";
import { createPostgresHost } from "../../src/in-cluster/postgres-host.js";
import { NO_METRICS } from "../../src/metrics/metrics.js";
import { processRun } from "../../src/runner/process-run.js";
import { ExecutionAbortedError } from "../../src/runtime/journal.js";
import { inJsonbOrder } from "../../src/util/jsonb-order.js";
import { createTestEngine, startedRun } from "../engine-fixture.js";

type Env = Awaited<ReturnType<typeof createTestEngine>>;
const logger = createLogger("deferred-start-test", "silent");
const NEVER = 600_000;

const step = (
  stepKey: string,
  seq: number,
  output: unknown,
  status: "completed" | "failed" = "completed",
) => ({
  stepKey,
  seq,
  kind: "run" as const,
  status,
  output,
  ...(status === "failed" ? { error: { name: "Error", message: "boom" } } : {}),
  attempts: 1,
  startedAt: new Date(),
});

/** A plain run through the engine, and the job the API enqueued for it. */
async function newRun(env: Env, input: unknown = { n: 1 }) {
  const { receipt } = await env.engine.executions.run(env.projectId, { workflowId: "wf", input });
  const id = receipt.execution_id;
  const job = await env.engine.dispatcher.queue(env.projectId, "default").getJob(runJobId(id, 0));
  return { id, job: job!.data as Extract<JobData, { kind: "run" }> };
}

function deferred(env: Env, job: Extract<JobData, { kind: "run" }>, deferMs = NEVER) {
  const started: string[] = [];
  const start = new DeferredStart(
    { pool: env.engine.pool, metrics: NO_METRICS },
    {
      executionId: job.executionId,
      dispatchSeq: job.dispatchSeq,
      first: job.first!,
      workerId: null,
      takenAt: new Date(),
    },
    (row) => started.push(`${row.status}/${row.lease}`),
    deferMs,
  );
  return { start, started };
}

const rowOf = (env: Env, id: string) => env.prisma.execution.findUniqueOrThrow({ where: { id } });
const stepsOf = async (env: Env, id: string) =>
  (await env.prisma.stepResult.findMany({ where: { executionId: id }, orderBy: { seq: "asc" } })).map((s) => [
    s.stepKey,
    s.status,
    s.output,
  ]);

function workflow(handler: (ctx: WorkflowContext<unknown>) => Promise<unknown>): WorkflowDefinition {
  return { [WORKFLOW_BRAND]: true, kind: "workflow", id: "wf", options: { id: "wf" }, handler };
}

describe("a new run's start, written with its first step", () => {
  it("the first job carries what the start would read, unless the lane has a limit or the input is large", async () => {
    const env = await createTestEngine();
    const plain = await newRun(env, { b: 1, a: [1.5, "x"] });
    expect(plain.job.first).toEqual({
      workflowId: "wf",
      queueName: "default",
      attempt: 1,
      lease: 0,
      input: { a: [1.5, "x"], b: 1 },
    });
    expect((await newRun(env, { text: "x".repeat(5000) })).job.first).toBeUndefined();
    await env.prisma.queue.create({
      data: { projectId: env.projectId, name: "default", concurrencyLimit: 3 },
    });
    expect((await newRun(env)).job.first).toBeUndefined();
  });

  it("the run stays queued until its first step's write, which stores the step and takes the run", async () => {
    const env = await createTestEngine();
    const { id, job } = await newRun(env);
    const { start, started } = deferred(env, job);
    expect((await rowOf(env, id)).status).toBe("queued");

    const stored = await start.saveStep(step("a", 1, "A"), 1_000_000);
    expect(stored.output).toBe("A");
    const row = await rowOf(env, id);
    expect([row.status, row.lease, row.dispatchSeq]).toEqual(["running", 1, 0]);
    expect(row.startedAt).not.toBeNull();
    expect(started).toEqual(["running/1"]);
    // Later steps are written under the claim that write took.
    await start.saveStep(step("b", 2, "B"), 1_000_000);
    expect(await stepsOf(env, id)).toEqual([
      ["a", "completed", "A"],
      ["b", "completed", "B"],
    ]);
    expect((await start.started()).lease).toBe(1);
    expect(started).toHaveLength(1);
    start.dispose();
  });

  it("a first step still going after a moment: the start is written on its own and the run shows running", async () => {
    const env = await createTestEngine();
    const { id, job } = await newRun(env);
    const { start, started } = deferred(env, job, 10);
    await expect.poll(async () => (await rowOf(env, id)).status).toBe("running");
    expect(started).toEqual(["running/1"]);
    await start.saveStep(step("a", 1, "A"), 1_000_000);
    expect(await stepsOf(env, id)).toEqual([["a", "completed", "A"]]);
    expect((await rowOf(env, id)).lease).toBe(1);
    start.dispose();
  });

  it("a run cancelled or timed out before a worker picked its job up loses the job; cancelled after, it stops at the first write", async () => {
    const env = await createTestEngine();
    const jobOf = (id: string) =>
      env.engine.dispatcher.queue(env.projectId, "default").getJob(runJobId(id, 0));
    const waiting = await newRun(env);
    await env.engine.executions.cancel(env.projectId, waiting.id);
    expect(await jobOf(waiting.id)).toBeUndefined();
    const late = await newRun(env);
    await env.prisma.execution.update({
      where: { id: late.id },
      data: { runTimeoutSeconds: 1, deadlineAt: new Date(Date.now() - 1000) },
    });
    expect(await env.engine.sweeps.timeOutRuns()).toBe(1);
    expect((await rowOf(env, late.id)).status).toBe("failed");
    expect(await jobOf(late.id)).toBeUndefined();

    const { id, job } = await newRun(env);
    const { start, started } = deferred(env, job);
    await env.engine.executions.cancel(env.projectId, id);
    await expect(start.saveStep(step("a", 1, null, "failed"), 1_000_000)).rejects.toThrow(
      ExecutionAbortedError,
    );
    // A completed result is kept (as for a running run that was cancelled), and the run stops.
    await expect(start.saveStep(step("b", 2, "B"), 1_000_000)).rejects.toThrow(ExecutionAbortedError);
    await expect(start.started()).rejects.toThrow(ExecutionAbortedError);
    expect(await stepsOf(env, id)).toEqual([["b", "completed", "B"]]);
    const row = await rowOf(env, id);
    expect([row.status, row.lease, row.workerId]).toEqual(["cancelled", 0, null]);
    expect(started).toEqual([]);
  });

  it("a start whose write failed keeps a finished step for the job's retry, which adopts it", async () => {
    const env = await createTestEngine();
    const { id, job } = await newRun(env);
    // The start written on its own waits behind this lock; its connection is then cut.
    const locker = await env.engine.pool.connect();
    await locker.query("BEGIN");
    await locker.query("SELECT 1 FROM executions WHERE id = $1 FOR UPDATE", [id]);
    const { start } = deferred(env, job, 1);
    // This file's database only: test files run side by side in one Postgres, and theirs take runs too.
    const takeWaiting = `FROM pg_stat_activity WHERE datname = current_database()
      AND wait_event_type = 'Lock' AND query LIKE '%taken AS%'`;
    // The take may wait in a group (which gives way after its lock timeout) and then again alone, so
    // whichever backend waits is cut until the start has failed; the lock is held all along, so it
    // cannot succeed meanwhile.
    let outcome: "started" | "failed" | undefined;
    start.started().then(
      () => {
        outcome = "started";
      },
      () => {
        outcome = "failed";
      },
    );
    await expect
      .poll(
        async () => {
          if (outcome === undefined)
            await env.engine.pool.query(`SELECT pg_terminate_backend(pid) ${takeWaiting}`);
          return outcome;
        },
        { timeout: 30_000 },
      )
      .toBe("failed");
    await locker.query("ROLLBACK");
    locker.release();

    const failed = start.saveStep(step("a", 1, "paid for"), 1_000_000);
    await expect(failed).rejects.toThrow();
    await expect(failed).rejects.not.toThrow(ExecutionAbortedError);
    expect((await rowOf(env, id)).status).toBe("queued");
    // BullMQ retries the job: the usual start, and the step is not run again.
    const retry = await startedRun(env.engine, id, 0);
    const journal = await env.engine.executions.journal(id, { dispatchSeq: 0, lease: retry!.lease });
    expect(journal.steps.get("a")?.output).toBe("paid for");
  });

  it("a redelivered job's start fences the first worker, which keeps its step for the second and stops", async () => {
    const env = await createTestEngine();
    const { id, job } = await newRun(env);
    const { start } = deferred(env, job);
    const second = await startedRun(env.engine, id, 0);
    expect(second?.lease).toBe(1);

    await expect(start.saveStep(step("a", 1, "from first"), 1_000_000)).rejects.toThrow(
      ExecutionAbortedError,
    );
    const row = await rowOf(env, id);
    expect([row.status, row.lease]).toEqual(["running", 1]);
    // What the first worker finished is adopted, not run again.
    const journal = await env.engine.executions.journal(id, { dispatchSeq: 0, lease: 1 });
    expect(journal.steps.get("a")?.output).toBe("from first");
  });

  it("a run queued for this very job but not as it was made fails the job (retried), instead of ending it", async () => {
    const env = await createTestEngine();
    const { id, job } = await newRun(env);
    const { start } = deferred(env, { ...job, first: { ...job.first!, lease: 7 } });
    const refused = start.saveStep(step("a", 1, "A"), 1_000_000);
    await expect(refused).rejects.toThrow(/queued for this job/);
    await expect(refused).rejects.not.toThrow(ExecutionAbortedError);
    expect((await rowOf(env, id)).status).toBe("queued");
  });

  it("through the job runner: a 3-step run completes, and a run whose first action is a sleep parks", async () => {
    const env = await createTestEngine();
    const run = async (definition: WorkflowDefinition, input?: unknown) => {
      const { id, job } = await newRun(env, input);
      const claims: number[] = [];
      const host = createPostgresHost(env.engine, job, {
        workerId: () => null,
        logger,
        delivery: { first: true, enqueuedAt: Date.now() },
        onStarted: (claim) => claims.push(claim.lease),
        deferStartMs: NEVER,
      });
      const result = await processRun({ host, workflows: new Map([["wf", definition]]), logger });
      return { id, result, claims };
    };

    let statusInFirstStep: string | undefined;
    const threeSteps = workflow(async (ctx) => {
      const a = await ctx.step.run("a", async () => {
        statusInFirstStep = (await rowOf(env, ctx.execution.id)).status;
        return (ctx.input as { n: number }).n + 1;
      });
      const b = await ctx.step.run("b", () => a * 2);
      return ctx.step.run("c", () => `${b}!`);
    });
    const done = await run(threeSteps, { n: 4 });
    expect(done.result).toBe("completed");
    expect(statusInFirstStep).toBe("queued");
    expect(done.claims).toEqual([1]);
    const row = await rowOf(env, done.id);
    expect([row.status, row.result, row.lease]).toEqual(["completed", "10!", 1]);
    expect(await stepsOf(env, done.id)).toEqual([
      ["a", "completed", 5],
      ["b", "completed", 10],
      ["c", "completed", "10!"],
    ]);
    const spans = await env.prisma.span.findMany({ where: { executionId: done.id, spanType: "step" } });
    expect(spans.map((s) => s.name).sort()).toEqual(["a", "b", "c"]);

    const napping = await run(
      workflow(async (ctx) => {
        await ctx.step.sleep("nap", 60_000);
        return "woke";
      }),
    );
    expect(napping.result).toBe("waiting");
    expect(napping.claims).toEqual([1]);
    expect((await rowOf(env, napping.id)).status).toBe("waiting");
  });

  it("a job delivered again, or picked up late, starts as usual", async () => {
    const env = await createTestEngine();
    for (const delivery of [
      { first: false, enqueuedAt: Date.now() },
      { first: true, enqueuedAt: Date.now() - 5000 },
    ]) {
      const { id, job } = await newRun(env);
      let statusInStep: string | undefined;
      const host = createPostgresHost(env.engine, job, { workerId: () => null, logger, delivery });
      const wf = workflow(async (ctx) =>
        ctx.step.run("a", async () => {
          statusInStep = (await rowOf(env, id)).status;
          return 1;
        }),
      );
      expect(await processRun({ host, workflows: new Map([["wf", wf]]), logger })).toBe("completed");
      expect(statusInStep).toBe("running");
    }
  });
});

describe("a new run sent to a worker before its insert, inserted with its first step", () => {
  /** This process's worker row (and CONSUMER_NAME its name), as the API sent the run to it. */
  const WORKER = randomUUID();
  const thisProcess = { workerId: WORKER, name: CONSUMER_NAME };
  const sentRun = (env: Env, input: unknown = { n: 1 }): NewRun => ({
    id: randomUUID(),
    projectId: env.projectId,
    request: { workflowId: "wf", input },
    queueName: "default",
    createdAt: new Date(Date.now() - 5),
  });
  const inserting = (env: Env, run: NewRun, deferMs = NEVER) => {
    const started: string[] = [];
    const start = new DeferredStart(
      { pool: env.engine.pool, metrics: NO_METRICS },
      { executionId: run.id, taking: insertTaking(run, WORKER, new Date()) },
      (row) => started.push(`${row.status}/${row.lease}`),
      deferMs,
    );
    return { start, started };
  };
  const rowIfAny = (env: Env, id: string) => env.prisma.execution.findUnique({ where: { id } });

  it("is not in Postgres until its first step's write, which inserts it running on this process", async () => {
    const env = await createTestEngine();
    const run = sentRun(env, { n: 4 });
    const { start, started } = inserting(env, run);
    expect(await rowIfAny(env, run.id)).toBeNull();

    expect((await start.saveStep(step("a", 1, "A"), 1_000_000)).output).toBe("A");
    const row = await rowOf(env, run.id);
    expect([row.status, row.lease, row.dispatchSeq, row.pushHolder]).toEqual([
      "running",
      1,
      0,
      CONSUMER_NAME,
    ]);
    expect([row.workflowId, row.queueName, row.input, row.rootExecutionId]).toEqual([
      "wf",
      "default",
      { n: 4 },
      run.id,
    ]);
    expect(row.createdAt).toEqual(run.createdAt);
    expect(started).toEqual(["running/1"]);
    await start.saveStep(step("b", 2, "B"), 1_000_000);
    expect(await stepsOf(env, run.id)).toEqual([
      ["a", "completed", "A"],
      ["b", "completed", "B"],
    ]);
    // Its API's own insert, later, finds it there: nothing changes, no job.
    await insertNewRunOn(env.engine.pool, run, thisProcess);
    expect(await rowOf(env, run.id)).toEqual(row);
    expect(
      await env.engine.dispatcher.queue(env.projectId, "default").getJob(runJobId(run.id, 0)),
    ).toBeUndefined();
    start.dispose();
  });

  it("a first step still going after a moment: the run is inserted on its own", async () => {
    const env = await createTestEngine();
    const run = sentRun(env);
    const { start, started } = inserting(env, run, 10);
    await expect.poll(async () => (await rowIfAny(env, run.id))?.status).toBe("running");
    expect(started).toEqual(["running/1"]);
    await start.saveStep(step("a", 1, "A"), 1_000_000);
    expect(await stepsOf(env, run.id)).toEqual([["a", "completed", "A"]]);
    start.dispose();
  });

  it("inserted by its API for it (too slow to insert it within the bound): the process's first write takes the row over, nothing runs twice", async () => {
    const env = await createTestEngine();
    const run = sentRun(env);
    const { start, started } = inserting(env, run);
    await insertNewRunOn(env.engine.pool, run, thisProcess);
    const inserted = await rowOf(env, run.id);
    expect([inserted.status, inserted.lease, inserted.pushHolder, inserted.workerId]).toEqual([
      "running",
      1,
      CONSUMER_NAME,
      WORKER,
    ]);

    await start.saveStep(step("a", 1, "paid for once"), 1_000_000);
    expect(started).toEqual(["running/1"]);
    await start.saveStep(step("b", 2, "B"), 1_000_000);
    expect(await stepsOf(env, run.id)).toEqual([
      ["a", "completed", "paid for once"],
      ["b", "completed", "B"],
    ]);
    expect((await rowOf(env, run.id)).lease).toBe(1);
    // No job: the row was the process's all along.
    expect(
      await env.engine.dispatcher.queue(env.projectId, "default").getJob(runJobId(run.id, 0)),
    ).toBeUndefined();
    start.dispose();
  });

  it("moved on before the process wrote (handed to its job): it stops, its finished step kept for the job", async () => {
    const env = await createTestEngine();
    const run = sentRun(env);
    const { start, started } = inserting(env, run);
    // As a process without room (or the hand-over of a process found gone) leaves it: queued, its job.
    await insertSentRun(env.engine, run);
    expect((await rowOf(env, run.id)).status).toBe("queued");

    await expect(start.saveStep(step("a", 1, "paid for"), 1_000_000)).rejects.toThrow(ExecutionAbortedError);
    await expect(start.started()).rejects.toThrow(ExecutionAbortedError);
    expect(started).toEqual([]);
    const row = await rowOf(env, run.id);
    expect([row.status, row.lease, row.pushHolder]).toEqual(["queued", 0, null]);
    // Its job starts it as usual and adopts the step instead of running it again.
    expect(
      await env.engine.dispatcher.queue(env.projectId, "default").getJob(runJobId(run.id, 0)),
    ).toBeDefined();
    const retry = await startedRun(env.engine, run.id, 0);
    const journal = await env.engine.executions.journal(run.id, { dispatchSeq: 0, lease: retry!.lease });
    expect(journal.steps.get("a")?.output).toBe("paid for");
  });

  it("a workflow no longer registered: neither the process nor its API inserts it, and the API's says not found", async () => {
    const env = await createTestEngine();
    const run = { ...sentRun(env), request: { workflowId: "gone", input: {} } };
    const { start } = inserting(env, run);
    await expect(start.started()).rejects.toThrow(/workflow 'gone' not found/);
    await expect(insertNewRunOn(env.engine.pool, run, thisProcess)).rejects.toThrow(
      /workflow 'gone' not found/,
    );
    await expect(insertSentRun(env.engine, run)).rejects.toThrow(/workflow 'gone' not found/);
    expect(await rowIfAny(env, run.id)).toBeNull();
  });

  it("the input the process is handed has its keys in the order a replay reads them back from Postgres", async () => {
    const env = await createTestEngine();
    // As JSON texts: a request's body is parsed (a "__proto__" key is then an own key, as in jsonb).
    const inputs = [
      '{"bb":1,"a":2,"ccc":{"zz":[{"y":1,"x":2}],"b":null},"é":1,"e":2,"10":1,"9":2,"__proto__":{"p":1}}',
      '[{"b":1,"a":1},"s",1.5,true]',
      '{"":1," ":2,"😀":3,"\uffff":4,"ab":5,"b":6}',
    ];
    for (const text of inputs) {
      const { rows } = await env.engine.pool.query<{ back: string }>("SELECT $1::jsonb::text AS back", [
        text,
      ]);
      const parsed = JSON.parse(text);
      expect(JSON.stringify(inJsonbOrder(parsed))).toBe(JSON.stringify(JSON.parse(rows[0]!.back)));
    }
  });
});
