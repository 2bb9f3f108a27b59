// A queue shared by a workflow only push workers serve and one only in-cluster workers serve: the push
// dispatcher consumes the queue, so it takes the in-cluster workflow's runs too. It must leave them for
// the in-cluster workers, and say (once) that the queue is shared, since the back and forth costs time.
import { createLogger } from "@spool/shared";
import { Queue } from "bullmq";
import { describe, expect, it } from "vitest";
import { BULL_PREFIX, bullQueueName, runJobId } from "../../src/dispatch/dispatcher.js";
import { PushDispatcher } from "../../src/push/push-dispatcher.js";
import { createTestEngine } from "../engine-fixture.js";

describe("a queue push and in-cluster workers share", () => {
  it("the push dispatcher leaves an in-cluster workflow's run queued and warns once that the queue is shared", async () => {
    const { engine, prisma, projectId } = await createTestEngine({ workflows: ["pushed", "local"] });
    await engine.workers.register(projectId, {
      deploymentId: "d1",
      mode: "push",
      pushEndpointUrl: "http://127.0.0.1:9/",
      capabilities: { workflow_ids: ["pushed"] },
    });
    await engine.workers.register(projectId, {
      deploymentId: "d1",
      mode: "queue",
      capabilities: { workflow_ids: ["local"] },
    });
    const logger = createLogger("shared-queue-test", "silent");
    const warnings: { fields: Record<string, unknown>; message: string }[] = [];
    let warned: () => void = () => {};
    const firstWarning = new Promise<void>((resolve) => {
      warned = resolve;
    });
    const dispatcher = new PushDispatcher(engine, {
      logger: Object.assign(Object.create(logger), {
        warn: (fields: Record<string, unknown>, message?: string) => {
          warnings.push({ fields, message: message ?? "" });
          warned();
        },
      }),
      refreshMs: 100,
      projectIds: [projectId],
    });
    const queue = new Queue(bullQueueName(projectId, "default"), {
      connection: engine.dispatcher.workerConnection(),
      prefix: BULL_PREFIX,
    });
    /** How often the dispatcher took the run's job so far. */
    const taken = async (id: string) => (await queue.getJob(runJobId(id, 0)))?.attemptsStarted ?? 0;
    try {
      dispatcher.start();
      const runs = await Promise.all(
        [1, 2].map(() => engine.executions.run(projectId, { workflowId: "local", input: {} })),
      );
      await firstWarning;
      // Each run's job taken and put back twice at least.
      for (const { receipt } of runs) {
        while ((await taken(receipt.execution_id)) < 2) await new Promise((r) => setTimeout(r, 50));
      }
      expect(warnings[0]?.fields).toEqual({ project_id: projectId, queue: "default", workflow_id: "local" });
      expect(warnings[0]?.message).toContain("give them queues of their own");
      // Both runs went back to the queue, untouched, for the in-cluster worker; the warning was said
      // once for the two, and not again at any later bounce of either.
      const rows = await prisma.execution.findMany({
        where: { id: { in: runs.map((r) => r.receipt.execution_id) } },
      });
      expect(rows.map((r) => [r.status, r.lease, r.workerId])).toEqual([
        ["queued", 0, null],
        ["queued", 0, null],
      ]);
      expect(warnings).toHaveLength(1);
    } finally {
      await dispatcher.stop();
      await queue.close();
    }
  });
});
