import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestLlm, type TestLlm } from "../llm/server.js";
import { eventually, type System, startSystem } from "./harness.js";

const EXAMPLES = fileURLToPath(new URL("../../examples/index.ts", import.meta.url));

describe("the research-agent example (as `npm run dev` serves it), against the test LLM", () => {
  let sys: System;
  let llm: TestLlm;

  beforeAll(async () => {
    llm = await startTestLlm();
    sys = await startSystem({ workflowsModule: EXAMPLES, workerEnv: { SPOOL_LLM_BASE_URL: llm.url } });
    await sys.startWorker();
  });
  afterAll(async () => {
    await sys?.stop();
    await llm?.close();
  });

  it("registers its agent and tools, searches, waits for approval to publish, and answers", async () => {
    const agents = await sys.client.request<{ agents: Record<string, unknown>[] }>("GET", "/agents");
    expect(agents.agents).toContainEqual(
      expect.objectContaining({
        id: "research-agent",
        provider: "openai-compatible",
        tools: ["search-notes", "publish-report"],
        config: expect.objectContaining({ max_steps: 8, base_url: llm.url }),
      }),
    );
    const tools = await sys.client.request<{ tools: Record<string, unknown>[] }>("GET", "/tools");
    expect(tools.tools.find((t) => t.id === "search-notes")).toMatchObject({
      parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
    });
    expect(tools.tools.find((t) => t.id === "publish-report")).toMatchObject({
      metadata: { approval: "always" },
    });

    llm.script(
      { toolCalls: [{ name: "search-notes", arguments: { query: "durable" } }] },
      {
        toolCalls: [
          { name: "publish-report", arguments: { title: "Durability", body: "Steps are stored." } },
        ],
      },
      { text: "Published the report (n1)." },
    );
    const { execution_id } = await sys.client.run("research-agent", { message: "Report on durability" });
    await eventually(async () =>
      (await sys.client.executions.get(execution_id)).status === "suspended" ? true : undefined,
    );
    await sys.client.executions.resume(execution_id, { approved: true });
    const done = await sys.client.executions.waitForResult(execution_id);
    expect(done.result).toMatchObject({ text: "Published the report (n1).", stopped: "final_answer" });
    const [found] = llm.requests[1]!.body.messages.filter((m) => m.role === "tool");
    expect(JSON.parse(String(found!.content))).toEqual([expect.objectContaining({ id: "n1" })]);
    expect(JSON.parse(String(llm.requests[2]!.body.messages.at(-1)!.content))).toMatchObject({
      published: true,
    });
  });
});
