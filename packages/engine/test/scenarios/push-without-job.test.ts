// A new run of a workflow a push worker serves, created in a process whose push dispatcher runs,
// takes no BullMQ job: it is inserted and started together, pushed, and held by that process. What
// a job would do for it when its dispatcher goes away is done by stop() and the scheduler's check.
import { createLogger } from "@spool/shared";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { CONSUMER_NAME, runJobId } from "../../src/dispatch/dispatcher.js";
import { OrphanedJobs } from "../../src/dispatch/orphaned-jobs.js";
import { claimOf } from "../../src/execution/claim.js";
import { createRootRunsOnPushWorkers, markPushed } from "../../src/execution/start-on-push-worker.js";
import { PushDispatcher } from "../../src/push/push-dispatcher.js";
import { createTestEngine } from "../engine-fixture.js";
import { acceptingPushWorker } from "../push-worker-fixture.js";

describe("runs pushed without a job", () => {
  /** Execution ids in the order the worker received their pushes. */
  let pushes: string[] = [];
  let env: Awaited<ReturnType<typeof createTestEngine>>;
  const logger = createLogger("push-without-job-test", "silent");
  const redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: 1 });

  beforeAll(async () => {
    const worker = await acceptingPushWorker();
    pushes = worker.pushes;
    env = await createTestEngine();
    await env.engine.workers.register(env.projectId, {
      deploymentId: "d1",
      mode: "push",
      pushEndpointUrl: worker.url,
      capabilities: { workflow_ids: ["wf"] },
    });
  });
  afterAll(() => redis.disconnect());

  const row = (id: string) => env.prisma.execution.findUniqueOrThrow({ where: { id } });
  const jobState = (id: string) => env.engine.dispatcher.jobState(env.projectId, "default", runJobId(id, 0));
  const until = async <T>(what: () => Promise<T | undefined>): Promise<T> => {
    for (;;) {
      const found = await what();
      if (found !== undefined) return found;
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const pushedRow = (id: string) =>
    until(async () => {
      const r = await row(id);
      return r.status === "running" && r.pushedLease === r.lease ? r : undefined;
    });
  /** A dispatcher of this project that has looked up the workflows push workers serve. */
  const dispatcher = async (o: { unheldGraceMs?: number } = {}) => {
    const d = new PushDispatcher(env.engine, {
      logger,
      refreshMs: 100,
      lockDurationMs: 1000,
      projectIds: [env.projectId],
      ...o,
    });
    d.start();
    await until(async () => (d.serves(env.projectId, "wf") ? true : undefined));
    return d;
  };

  it("goes out with no job, held by this process until it leaves its worker; stopping hands it to a job another dispatcher adopts", async () => {
    const first = await dispatcher();
    const { receipt } = await env.engine.executions.run(env.projectId, { workflowId: "wf", input: {} });
    const id = receipt.execution_id;
    const running = await pushedRow(id);
    expect(pushes).toEqual([id]);
    expect(running.pushHolder).toBe(CONSUMER_NAME);
    expect(await jobState(id)).toBe("unknown");

    let adopted: () => void = () => {};
    const adoption = new Promise<void>((resolve) => {
      adopted = resolve;
    });
    await first.stop();
    expect(await jobState(id)).toBe("waiting");
    const second = new PushDispatcher(env.engine, {
      logger: Object.assign(Object.create(logger), {
        info: (_fields: unknown, message?: string) => {
          if (typeof message === "string" && message.startsWith("adopted a pushed run")) adopted();
        },
      }),
      refreshMs: 100,
      lockDurationMs: 1000,
      projectIds: [env.projectId],
    });
    try {
      second.start();
      await adoption;
      await env.engine.executions.complete(id, claimOf(running), "done remotely");
      await until(async () => ((await jobState(id)) === "completed" ? true : undefined));
      expect((await row(id)).status).toBe("completed");
      expect(pushes).toEqual([id]);
    } finally {
      await second.stop();
    }
  });

  it("the scheduler's check gives a gone process's runs their jobs: one its worker took is adopted, one whose push never left is pushed again", async () => {
    pushes.length = 0;
    // What an API process leaves when it dies: two runs it started without jobs, one pushed.
    const gone = "gone-api.1.deadbeef";
    const [out, lost] = await Promise.all(
      createRootRunsOnPushWorkers(env.engine.pool, [
        {
          projectId: env.projectId,
          request: { workflowId: "wf", input: {} },
          id: crypto.randomUUID(),
          pushHolder: gone,
        },
        {
          projectId: env.projectId,
          request: { workflowId: "wf", input: {} },
          id: crypto.randomUUID(),
          pushHolder: gone,
        },
      ]),
    );
    if (!out?.started || !lost?.started) throw new Error("not started");
    await markPushed(env.engine.pool, claimOf(out.started.execution), out.started.execution.id);

    // Redis is shared with other test files: a grace that a live consumer's reconnect never outlasts.
    const check = new OrphanedJobs(redis, env.engine.dispatcher, env.engine.pool, logger, { graceMs: 2000 });
    const ids = [out.created.execution.id, lost.created.execution.id];
    await until(async () => {
      await check.check();
      return (await Promise.all(ids.map(row))).every((r) => r.pushHolder === null) ? true : undefined;
    });
    for (const id of ids) expect(await jobState(id)).toBe("waiting");

    const d = await dispatcher();
    try {
      const again = await pushedRow(lost.created.execution.id);
      expect(again.lease).toBe(lost.started.execution.lease + 1);
      expect(pushes).toEqual([lost.created.execution.id]);
      // The run its worker took is only waited for: same lease, not pushed again.
      await until(async () => ((await jobState(out.created.execution.id)) === "active" ? true : undefined));
      expect(await row(out.created.execution.id)).toMatchObject({
        status: "running",
        lease: out.started.execution.lease,
      });
      for (const started of [out.started.execution, again]) {
        await env.engine.executions.complete(started.id, claimOf(started), "done remotely");
      }
      expect(pushes).toEqual([lost.created.execution.id]);
    } finally {
      await d.stop();
    }
  });

  it("a run this process started but does not hold (its start's answer was lost) goes to its job and is pushed", async () => {
    pushes.length = 0;
    // What a start whose answer never came back leaves: the run started, held by this process.
    const [lost] = await Promise.all(
      createRootRunsOnPushWorkers(env.engine.pool, [
        {
          projectId: env.projectId,
          request: { workflowId: "wf", input: {} },
          id: crypto.randomUUID(),
          pushHolder: CONSUMER_NAME,
        },
      ]),
    );
    if (!lost?.started) throw new Error("not started");
    const d = await dispatcher({ unheldGraceMs: 0 });
    try {
      const again = await pushedRow(lost.created.execution.id);
      expect(again.lease).toBe(lost.started.execution.lease + 1);
      expect(again.pushHolder).toBeNull();
      expect(pushes).toEqual([lost.created.execution.id]);
      await env.engine.executions.complete(again.id, claimOf(again), "done remotely");
    } finally {
      await d.stop();
    }
  });
});
