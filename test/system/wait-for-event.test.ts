import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countOf, record } from "../fixtures/side-effects.js";
import { eventually, type System, startSystem } from "./harness.js";

describe("waitForEvent (real worker process)", () => {
  let sys: System;

  beforeAll(async () => {
    sys = await startSystem();
    await sys.startWorker();
  });
  afterAll(async () => {
    await sys?.stop();
  });

  it("an event published after the step was reached but before the run parked still answers it", async () => {
    const { execution_id } = await sys.client.run("event-while-running", { orderId: "o-7" });
    await eventually(async () => ((await countOf(execution_id, "busy-start")) === 1 ? true : undefined));
    // The run is still running (its sibling step is busy), so no wait row exists yet.
    expect((await sys.client.executions.get(execution_id)).status).toBe("running");
    await sys.client.events.publish("shipments", { orderId: "o-6", note: "not this one" });
    await sys.client.events.publish("shipments", { orderId: "o-7", carrier: "dhl" });
    await record(execution_id, "go");

    const done = await sys.client.executions.waitForResult(execution_id, { timeoutMs: 15_000 });
    expect(done).toMatchObject({
      status: "completed",
      result: { shipped: { orderId: "o-7", carrier: "dhl" } },
    });
  });
});
