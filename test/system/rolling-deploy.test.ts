import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, type System, startSystem } from "./harness.js";

const NEW_RELEASE = fileURLToPath(new URL("../fixtures/new-release.ts", import.meta.url));

describe("a run of a workflow the worker that took it does not have (real worker processes)", () => {
  let sys: System;

  beforeAll(async () => {
    // Long heartbeats: a frozen worker stays online for the length of the test.
    sys = await startSystem({ heartbeatIntervalSeconds: 60 });
  });
  afterAll(async () => {
    await sys?.stop();
  });

  it("is handed back while another online worker serves it, and that one runs it", async () => {
    const older = await sys.startWorker();
    const newer = await sys.startWorker({ SPOOL_WORKFLOWS_MODULE: NEW_RELEASE });
    newer.child.kill("SIGSTOP"); // online, but takes nothing: only the older worker can take the run
    try {
      const { execution_id } = await sys.client.run("only-in-new-release", {});
      await older.waitFor(
        (l) => l.msg === "workflow not loaded here; handed back for a worker that serves it",
      );
      expect((await sys.client.executions.get(execution_id)).status).toBe("queued");
      newer.child.kill("SIGCONT");
      const done = await sys.client.executions.waitForResult(execution_id, { timeoutMs: 30_000 });
      expect(done).toMatchObject({ status: "completed", result: "done by the new release" });
    } finally {
      newer.child.kill("SIGCONT");
    }
    await Promise.all([older.kill("SIGKILL"), newer.kill("SIGKILL")]);
  });

  it("fails with a clear error when no online worker serves it", async () => {
    await sys.client.request("POST", "/workers/deployments/default/workflows", {
      workflows: [{ workflow_id: "nobody-has-this" }],
    });
    await sys.startWorker();
    const { execution_id } = await sys.client.run("nobody-has-this", {});
    const done = await eventually(async () => {
      const e = await sys.client.executions.get(execution_id);
      return e.status === "failed" ? e : undefined;
    }, 15_000);
    expect(done.error).toMatchObject({
      name: "WorkflowNotLoadedError",
      message: expect.stringContaining("'nobody-has-this' is not loaded by any worker"),
    });
  });
});
