import { fileURLToPath } from "node:url";
import type { TraceResponse } from "@spool/shared";
import { traceIdOf } from "@spool/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { z } from "zod";
import { countOf } from "../fixtures/side-effects.js";
import { startTestLlm, type TestLlm } from "../llm/server.js";
import { eventually, type System, startSystem } from "./harness.js";

const AGENTS = fileURLToPath(new URL("../fixtures/agents.ts", import.meta.url));

describe("agent crash recovery (real worker processes, SIGKILL)", () => {
  let sys: System;
  let llm: TestLlm;

  beforeAll(async () => {
    llm = await startTestLlm();
    sys = await startSystem({ workflowsModule: AGENTS, workerEnv: { SPOOL_LLM_BASE_URL: llm.url } });
    await sys.startScheduler();
  });
  afterAll(async () => {
    await sys?.stop();
    await llm?.close();
  });

  it("a worker SIGKILLed after the second LLM call: the run finishes elsewhere and the LLM was asked exactly 3 times", async () => {
    llm.script(
      { toolCalls: [{ name: "get-weather", arguments: { city: "Oslo" } }] },
      { toolCalls: [{ name: "slow-lookup", arguments: { topic: "fjords" } }] },
      { text: "Oslo is mild; three archive entries on fjords." },
    );
    const victim = await sys.startWorker();
    const { execution_id } = await sys.client.run("crash-agent", { message: "Tell me about Oslo" });
    // The slow tool of turn 2 has started, so the second LLM call is stored: now the worker dies.
    await eventually(async () =>
      (await countOf(execution_id, "slow-lookup-start")) === 1 ? true : undefined,
    );
    const llm2 = await sys.db.query(
      "SELECT status FROM step_results WHERE execution_id = $1 AND step_key = 'llm-2'",
      [execution_id],
    );
    expect(llm2.rows).toEqual([{ status: "completed" }]);
    expect(llm.requests).toHaveLength(2);
    await victim.kill("SIGKILL");

    await sys.startWorker();
    const done = await sys.client.executions.waitForResult(execution_id, { timeoutMs: 45_000 });
    expect(done.status).toBe("completed");
    expect(done.result).toMatchObject({ text: "Oslo is mild; three archive entries on fjords." });
    expect(llm.requests).toHaveLength(3);
    expect(await countOf(execution_id, "get-weather:Oslo")).toBe(1);
    expect(await countOf(execution_id, "slow-lookup-start")).toBe(2); // unfinished, so it ran again
    // The last request continued the conversation from the stored responses.
    expect(llm.requests[2]!.body.messages.filter((m) => m.role === "tool")).toHaveLength(2);

    const trace = await sys.client.request<z.infer<typeof TraceResponse>>(
      "GET",
      `/traces/${traceIdOf(execution_id)}`,
    );
    expect(trace.spans.filter((s) => s.span_type === "llm").map((s) => s.name)).toEqual([
      "llm-1",
      "llm-2",
      "llm-3",
    ]);
    expect(trace.spans.filter((s) => s.span_type === "tool")).toHaveLength(2);
    expect(trace.status).toBe("completed");
  });
});
