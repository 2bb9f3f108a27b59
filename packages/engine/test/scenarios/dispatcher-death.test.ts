// The API process pushing a run dies while its worker runs it: BullMQ hands the run's job to another
// dispatcher, which must adopt the run (wait for it), not push it a second time.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createLogger } from "@spool/shared";
import { QueueEvents } from "bullmq";
import { afterAll, describe, expect, it } from "vitest";
import { BULL_PREFIX, bullQueueName } from "../../src/dispatch/dispatcher.js";
import { claimOf } from "../../src/execution/claim.js";
import { PushDispatcher } from "../../src/push/push-dispatcher.js";
import { createTestEngine } from "../engine-fixture.js";

describe("a push dispatcher that dies while its run is out on a worker", () => {
  const pushes: string[] = [];
  const worker = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => {
      body += c.toString();
    });
    req.on("end", () => {
      if (req.url === "/execute") pushes.push((JSON.parse(body) as { execution_id: string }).execution_id);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ status: "accepted" }));
    });
  });
  afterAll(() => new Promise<void>((resolve) => worker.close(() => resolve())));

  it("leaves its job to another dispatcher, which adopts the run without pushing it again", async () => {
    await new Promise<void>((resolve) => worker.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(worker.address() as AddressInfo).port}`;
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
      first.start();
      const { receipt } = await engine.executions.run(projectId, { workflowId: "wf", input: {} });
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
