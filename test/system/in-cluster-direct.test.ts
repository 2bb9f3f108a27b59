// New runs started on in-cluster worker processes without BullMQ jobs (in-cluster/direct-runs.ts):
// what a job's lock gave still holds when the process dies, freezes, or opts out.
import { decodeStartedRun, runDispatch } from "@spool/engine";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countOf } from "../fixtures/side-effects.js";
import { eventually, type Proc, type System, startSystem } from "./harness.js";

/** A worker's lease (SPOOL_JOB_LOCK_MS) that no stall of a loaded machine outlasts. */
const LONG_LEASE = { SPOOL_JOB_LOCK_MS: "30000" };

describe("runs started on in-cluster workers without jobs (real worker and scheduler processes)", () => {
  let sys: System;

  beforeAll(async () => {
    sys = await startSystem();
    await sys.startScheduler();
  });
  afterAll(async () => {
    await sys?.stop();
  });

  /** Until the API sends new runs of `workflowId` to its in-cluster workers (it looks every 200 ms). */
  const sentDirectly = (workflowId: string) =>
    eventually(
      async () => (sys.inClusterSender.serves(sys.projectId, workflowId) ? true : undefined),
      10_000,
      `the API sending ${workflowId} runs to in-cluster workers`,
    );
  const row = async (id: string) =>
    (await sys.db.query("SELECT status, worker_id, push_holder, lease FROM executions WHERE id = $1", [id]))
      .rows[0];
  const jobState = async (id: string) => {
    const e = await sys.engine.prisma.execution.findUniqueOrThrow({ where: { id } });
    const job = runDispatch({ ...e, dispatchSeq: 0 });
    return sys.engine.dispatcher.jobState(sys.projectId, job.queueName, job.jobId);
  };
  /** Until the API no longer counts a SIGKILLed worker's process seen (3 s after its last renewal). */
  const gone = (worker: Proc & { workerId: string }) =>
    eventually(async () => {
      const { rows } = await sys.db.query(
        "SELECT 1 FROM workers WHERE id = $1 AND consumer_seen_at > now() - interval '3 seconds'",
        [worker.workerId],
      );
      return rows.length === 0 ? true : undefined;
    });
  const consumerOf = async (worker: Proc & { workerId: string }) =>
    (await sys.db.query("SELECT consumer_name FROM workers WHERE id = $1", [worker.workerId])).rows[0]
      .consumer_name;
  /** The worker's process name, once its row names it (within a second of its start). */
  const advertised = (worker: Proc & { workerId: string }) =>
    eventually(async () => (await consumerOf(worker)) ?? undefined);
  /** Until the API sends new runs of `workflowId` before their insert to exactly these processes. */
  const sendsNewRunsTo = (workflowId: string, consumers: string[]) =>
    eventually(
      async () =>
        JSON.stringify(sys.inClusterSender.sendsNewRunsTo(sys.projectId, workflowId)) ===
        JSON.stringify(consumers)
          ? true
          : undefined,
      10_000,
      `the API sending new ${workflowId} runs to ${consumers.join(", ")}`,
    );
  /** The ids of the new runs published on the run channels matching `pattern` from now on. */
  const listen = async (pattern: string) => {
    const subscriber = new Redis(sys.redisUrl);
    const ids: string[] = [];
    subscriber.on("pmessage", (_pattern: string, _channel: string, message: string) => {
      const newRun = (JSON.parse(message) as { newRun?: { id: string } }).newRun;
      if (newRun) ids.push(newRun.id);
    });
    await subscriber.psubscribe(pattern);
    return { newRunIds: () => ids, close: () => subscriber.disconnect() };
  };
  const workerOf = async (workers: (Proc & { workerId: string })[], id: string) => {
    const { worker_id } = await row(id);
    return workers.find((w) => w.workerId === worker_id);
  };

  it("a new run goes to the worker process with no job, named as held by it, and completes", async () => {
    const worker = await sys.startWorker();
    try {
      await sentDirectly("three-steps");
      const { execution_id } = await sys.client.run("three-steps", { n: 4 });
      const done = await sys.client.executions.waitForResult(execution_id);
      expect(done).toMatchObject({ status: "completed", result: { a: 5, b: 10, c: "n=4 -> 10" } });
      // Never a BullMQ job: the run was started by the insert's commit and published to the process.
      expect(await jobState(execution_id)).toBe("unknown");
      expect((await row(execution_id)).push_holder).toBe(await consumerOf(worker));
      // What the API published reads back as the stored row.
      const stored = await sys.engine.prisma.execution.findUniqueOrThrow({ where: { id: execution_id } });
      expect(decodeStartedRun(JSON.stringify(stored))).toEqual(stored);
    } finally {
      // Gracefully: its row stops naming it at once.
      await worker.kill("SIGTERM");
    }
  });

  it("SIGKILL of the worker mid-step: its run goes to a job, another worker finishes it, step 1 once", async () => {
    const workers = [await sys.startWorker(), await sys.startWorker()];
    let victim: (Proc & { workerId: string }) | undefined;
    try {
      await sentDirectly("crashable");
      const { execution_id } = await sys.client.run("crashable", {});
      await eventually(async () => ((await countOf(execution_id, "step-2-start")) === 1 ? true : undefined));
      expect(await jobState(execution_id)).toBe("unknown");
      victim = await workerOf(workers, execution_id);
      expect(victim).toBeDefined();
      await victim!.kill("SIGKILL");
      // Runs sent meanwhile to the dead process (the API still counts it seen) reach nobody: they
      // go back to their jobs at once.
      const more = await Promise.all([1, 2, 3].map((n) => sys.client.run("three-steps", { n })));

      const done = await sys.client.executions.waitForResult(execution_id, { timeoutMs: 45_000 });
      expect(done.status).toBe("completed");
      expect(await countOf(execution_id, "step-1")).toBe(1);
      expect(await countOf(execution_id, "step-2-start")).toBe(2);
      expect(await countOf(execution_id, "step-3")).toBe(1);
      for (const { execution_id: id } of more) {
        expect((await sys.client.executions.waitForResult(id, { timeoutMs: 30_000 })).status).toBe(
          "completed",
        );
      }
    } finally {
      await Promise.all(workers.map((w) => w.kill("SIGTERM")));
      // The next test's runs must not be sent to the dead one.
      if (victim) await gone(victim);
    }
  });

  it("a frozen worker's run goes to a job once its lease lapses, and new runs pass it by", async () => {
    const workers = [await sys.startWorker(), await sys.startWorker()];
    let frozen: (Proc & { workerId: string }) | undefined;
    try {
      await sentDirectly("crashable");
      const { execution_id } = await sys.client.run("crashable", {});
      await eventually(async () => ((await countOf(execution_id, "step-2-start")) === 1 ? true : undefined));
      expect((await row(execution_id)).push_holder).not.toBeNull();
      frozen = await workerOf(workers, execution_id);
      expect(frozen).toBeDefined();
      const other = workers.find((w) => w !== frozen)!;
      frozen!.child.kill("SIGSTOP"); // listed by Redis (its connections stay open), but it does nothing
      // Its lease (SPOOL_JOB_LOCK_MS, 2 s here) lapses: the scheduler hands the run to its job, and
      // the other worker replays it under a new lease.
      const done = await sys.client.executions.waitForResult(execution_id, { timeoutMs: 45_000 });
      expect(done.status).toBe("completed");
      expect(await countOf(execution_id, "step-1")).toBe(1);
      expect(await countOf(execution_id, "step-3")).toBe(1);
      const finisher = await sys.db.query(
        "SELECT DISTINCT pid FROM test_side_effects WHERE execution_id = $1 AND label = 'step-3'",
        [execution_id],
      );
      expect(finisher.rows.map((r) => r.pid)).toEqual([other.child.pid]);
      // Not seen for 3 s, the frozen process is not sent new runs: the other one is.
      const { execution_id: next } = await sys.client.run("three-steps", { n: 1 });
      expect((await sys.client.executions.waitForResult(next, { timeoutMs: 30_000 })).status).toBe(
        "completed",
      );
      expect((await row(next)).push_holder).toBe(await consumerOf(other));
    } finally {
      frozen?.child.kill("SIGCONT");
      await Promise.all(workers.map((w) => w.kill("SIGKILL")));
      for (const w of workers) await gone(w);
    }
  });

  it("a run its caller waits for is sent before its insert: the process inserts it with its first step, no job", async () => {
    // A lease far longer than the run: these check the insert's path, not a frozen worker's hand-over
    // (a 2 s lease can lapse while a loaded CI box stalls a worker that has just started).
    const worker = await sys.startWorker(LONG_LEASE);
    const channels = await listen(`spool:runs:*`);
    try {
      const consumer = await advertised(worker);
      await sendsNewRunsTo("three-steps", [consumer]);
      const done = await sys.client.runAndWait("three-steps", { n: 4 });
      expect(done).toMatchObject({ status: "completed", result: { a: 5, b: 10, c: "n=4 -> 10" } });
      // What went over the process's channel was the request, not a started row.
      expect(channels.newRunIds()).toEqual([done.execution_id]);
      expect(await jobState(done.execution_id)).toBe("unknown");
      const stored = await row(done.execution_id);
      expect([stored.status, stored.push_holder, stored.lease]).toEqual(["completed", consumer, 1]);
      const steps = await sys.db.query("SELECT step_key FROM step_results WHERE execution_id = $1", [
        done.execution_id,
      ]);
      expect(steps.rows.map((r) => r.step_key).sort()).toEqual(["add-one", "describe", "double"]);
    } finally {
      channels.close();
      await worker.kill("SIGTERM");
    }
  });

  it("a wait shorter than the run answers with the run as the process inserted it, which then completes once", async () => {
    // A lease far longer than the run: these check the insert's path, not a frozen worker's hand-over
    // (a 2 s lease can lapse while a loaded CI box stalls a worker that has just started).
    const worker = await sys.startWorker(LONG_LEASE);
    try {
      const consumer = await advertised(worker);
      await sendsNewRunsTo("slow-middle", [consumer]);
      const early = await sys.client.runAndWait("slow-middle", {}, { waitSeconds: 1 });
      expect(early.status).toBe("running");
      const running = await row(early.execution_id);
      expect([running.status, running.push_holder, running.worker_id]).toEqual([
        "running",
        consumer,
        worker.workerId,
      ]);
      const done = await sys.client.executions.waitForResult(early.execution_id);
      expect(done).toMatchObject({ status: "completed", result: "done" });
      expect(await countOf(early.execution_id, "first")).toBe(1);
      expect(await countOf(early.execution_id, "slow-start")).toBe(1);
      expect(await jobState(early.execution_id)).toBe("unknown");
    } finally {
      await worker.kill("SIGTERM");
    }
  });

  it("a sent run its process never inserts (the message lost) is inserted held by that process, then handed to its job", async () => {
    // A worker that takes runs only through its queue, and a process named on its row whose channel
    // swallows what it is sent (and which Redis does not list as a client).
    const worker = await sys.startWorker({ SPOOL_WORKER_DIRECT_RUNS: "false" });
    const ghost = await listen("spool:runs:ghost");
    await sys.db.query(
      "UPDATE workers SET consumer_name = 'ghost', consumer_seen_at = now() + interval '1 minute' WHERE id = $1",
      [worker.workerId],
    );
    try {
      await sendsNewRunsTo("three-steps", ["ghost"]);
      const answer = sys.client.runAndWait("three-steps", { n: 2 }, { waitSeconds: 60 });
      const id = await eventually(async () => ghost.newRunIds()[0]);
      // A second after the send, its API inserts it as the process would have: running, held by it.
      await eventually(async () => ((await row(id))?.push_holder === "ghost" ? true : undefined));
      // The process is missing from Redis's clients: the scheduler hands the run to its job.
      const done = await answer;
      expect(done).toMatchObject({
        execution_id: id,
        status: "completed",
        result: { a: 3, b: 6, c: "n=2 -> 6" },
      });
      expect(ghost.newRunIds()).toEqual([id]);
      expect(await jobState(id)).not.toBe("unknown");
      expect((await row(id)).push_holder).toBeNull();
    } finally {
      await sys.db.query("UPDATE workers SET consumer_name = NULL, consumer_seen_at = NULL WHERE id = $1", [
        worker.workerId,
      ]);
      ghost.close();
      await worker.kill("SIGTERM");
    }
  });

  it("a worker started with SPOOL_WORKER_DIRECT_RUNS=false takes its runs through the queue", async () => {
    const worker = await sys.startWorker({ SPOOL_WORKER_DIRECT_RUNS: "false" });
    try {
      expect(await consumerOf(worker)).toBeNull();
      const { execution_id } = await sys.client.run("three-steps", { n: 2 });
      expect((await sys.client.executions.waitForResult(execution_id)).status).toBe("completed");
      // Its job (active until BullMQ hears the worker is done with it, then completed).
      expect(await jobState(execution_id)).not.toBe("unknown");
      expect((await row(execution_id)).push_holder).toBeNull();
    } finally {
      await worker.kill("SIGTERM");
    }
  });
});
