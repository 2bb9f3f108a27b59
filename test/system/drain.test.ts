import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countOf } from "../fixtures/side-effects.js";
import { eventually, type System, startSystem } from "./harness.js";

// Job locks far longer than the test waits: a run that only came back through lock expiry (or a
// job left active against the queue's limit of 1) could not finish in time.
const LONG_LOCK = { SPOOL_JOB_LOCK_MS: "60000" };

describe("graceful drain (real worker processes, SIGTERM)", () => {
  let sys: System;

  beforeAll(async () => {
    sys = await startSystem();
    // Quick to judge a consumer gone: a draining worker must still not look like one.
    await sys.startScheduler({ SPOOL_ORPHANED_JOB_GRACE_MS: "1500" });
  });
  afterAll(async () => {
    await sys?.stop();
  });

  it("a run still going when the drain times out is handed back at once and another worker finishes it", async () => {
    const first = await sys.startWorker({ ...LONG_LOCK, SPOOL_DRAIN_TIMEOUT_MS: "300" });
    const { execution_id } = await sys.client.run("drainable", {});
    await eventually(async () => ((await countOf(execution_id, "hold-start")) === 1 ? true : undefined));

    await first.kill("SIGTERM");
    const stopped = await first.waitFor((l) => l.msg === "stopped");
    expect(stopped).toMatchObject({ finished: false, handedBack: 1 });
    expect(await first.exited).toBe(0);
    expect((await sys.client.executions.get(execution_id)).status).toBe("queued");

    const second = await sys.startWorker(LONG_LOCK);
    const done = await sys.client.executions.waitForResult(execution_id, { timeoutMs: 20_000 });
    expect(done).toMatchObject({ status: "completed", result: "held" });
    expect(await countOf(execution_id, "hold-start")).toBe(2);
    second.kill("SIGTERM");
    await second.exited;
  });

  it("a draining worker's run is not taken back as an orphan while the worker still runs it", async () => {
    // BullMQ closes a draining Worker's blocking connection at once; its process stays alive.
    const first = await sys.startWorker({ ...LONG_LOCK, SPOOL_DRAIN_TIMEOUT_MS: "4000" });
    const { execution_id } = await sys.client.run("drainable", {});
    await eventually(async () => ((await countOf(execution_id, "hold-start")) === 1 ? true : undefined));
    // Standing by: it would start the run again at once if its job went back to the queue.
    await sys.startWorker(LONG_LOCK);

    await first.kill("SIGTERM");
    const stopped = await first.waitFor((l) => l.msg === "stopped", 30_000);
    expect(stopped).toMatchObject({ finished: false, handedBack: 1 });
    expect(await countOf(execution_id, "hold-start")).toBe(1);

    const done = await sys.client.executions.waitForResult(execution_id, { timeoutMs: 20_000 });
    expect(done).toMatchObject({ status: "completed", result: "held" });
    expect(await countOf(execution_id, "hold-start")).toBe(2);
  });
});
