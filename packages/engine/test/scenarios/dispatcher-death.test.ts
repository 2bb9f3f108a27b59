// The API process pushing a run dies while its worker runs it: BullMQ hands the run's job to another
// dispatcher, which must adopt the run (wait for it), not push it a second time.
import { createLogger } from "@spool/shared";
import { QueueEvents } from "bullmq";
import { describe, expect, it } from "vitest";
import { BULL_PREFIX, bullQueueName } from "../../src/dispatch/dispatcher.js";
import { claimOf } from "../../src/execution/claim.js";
import { PushDispatcher } from "../../src/push/push-dispatcher.js";
import { createTestEngine } from "../engine-fixture.js";
import { acceptingPushWorker } from "../push-worker-fixture.js";

describe("a push dispatcher that dies while its run is out on a worker", () => {
  it("leaves its job to another dispatcher, which adopts the run without pushing it again", async () => {
    const { url, pushes } = await acceptingPushWorker();
    const { engine, prisma, projectId } = await createTestEngine();
    await engine.workers.register(projectId, {
      deploymentId: "d1",
      mode: "push",
      pushEndpointUrl: url,
      capabilities: { workflow_ids: ["wf"] },
    });
    const logger = createLogger("dispatcher-test", "silent");
    const options = { logger, refreshMs: 100, lockDurationMs: 1000, projectIds: [projectId] };
    const first = new PushDispatcher(engine, options);
    // The second dispatcher's log says when it adopts the run.
    let adopted: () => void = () => {};
    const adoption = new Promise<void>((resolve) => {
      adopted = resolve;
    });
    const second = new PushDispatcher(engine, {
      ...options,
      logger: Object.assign(Object.create(logger), {
        info: (_fields: unknown, message?: string) => {
          if (typeof message === "string" && message.startsWith("adopted a pushed run")) adopted();
        },
      }),
    });
    const events = new QueueEvents(bullQueueName(projectId, "default"), {
      connection: engine.dispatcher.workerConnection(),
      prefix: BULL_PREFIX,
    });
    const outcome = new Promise<string>((resolve) =>
      events.on("completed", ({ returnvalue }) => resolve(String(returnvalue))),
    );
    try {
      await events.waitUntilReady();
      // Created before any dispatcher runs, so it goes through its job (push-without-job.test.ts
      // covers the runs a dispatcher starts without one).
      const { receipt } = await engine.executions.run(projectId, { workflowId: "wf", input: {} });
      first.start();
      const id = receipt.execution_id;
      const pushed = async () => {
        for (;;) {
          const row = await prisma.execution.findUniqueOrThrow({ where: { id } });
          if (row.pushedLease === row.lease && row.status === "running") return row;
          await new Promise((r) => setTimeout(r, 20));
        }
      };
      const running = await pushed();
      expect(pushes).toEqual([id]);

      // The first dispatcher goes away holding the job; the second takes it once its lock lapses,
      // and adopts the run instead of pushing it again.
      await first.stop();
      second.start();
      await adoption;

      // The worker finishes the run; the second dispatcher's hold ends and completes the job.
      await engine.executions.complete(id, claimOf(running), "done remotely");
      expect(await outcome).toBe("adopted");
      expect(pushes).toEqual([id]);
    } finally {
      await events.close();
      await second.stop();
    }
  });
});
